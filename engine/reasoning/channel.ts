/**
 * The `assistant_channel` of several nodes sharing one log, over a broker (NATS, Redis Streams).
 * Job notices never cross it: every node that holds an integration folds its events and publishes their
 * notices to its own listeners, so a notice cannot be lost between a commit and a publish. What crosses is a
 * node's news for the others: it committed events of an integration (`log.appended`), and a node with a
 * stream or a follower of that integration folds that integration's part of the log at once instead of at
 * its next look. Whatever comes
 * from the broker only makes a node fold: anyone who can write to the broker can make a node look early,
 * never make it act (a stream taken over is a logged fact, `integration.stream_held`). A node subscribes on
 * the broker to the integrations it holds streams and followers of, and to nothing else.
 */
import { LocalPubSub, assistantChannel, integrationOf, type ChannelNotice, type NoticeHandler, type PubSub } from './pubsub.js';

interface BrokerSubscription {
  listeners: number;
  readonly unsubscribe: () => void;
}

export class ClusterChannel implements PubSub {
  private readonly local: LocalPubSub;
  private readonly subscriptions = new Map<string, BrokerSubscription>();

  constructor(
    private readonly broker: PubSub,
    /** This node (its epoch), named in its news so that it does not fold again what it committed itself. */
    private readonly node: string,
    /** Folds what the shared log took of the integration since this node's last look. */
    private readonly wake: (integrationId: string) => void,
    onError: (error: unknown, topic: string) => void,
  ) {
    this.local = new LocalPubSub(onError);
  }

  /** A job notice, for this node's listeners alone: every node publishes its own as it folds. */
  publish(topic: string, notice: ChannelNotice): void {
    this.local.publish(topic, notice);
  }

  announce(integrationId: string): void {
    this.broker.publish(assistantChannel(integrationId), { type: 'log.appended', node: this.node });
  }

  /** Subscribes to an integration's topic (`assistantChannel`): no other topic crosses the broker. */
  subscribe(topic: string, handler: NoticeHandler): () => void {
    const integrationId = integrationOf(topic);
    if (integrationId === undefined) throw new RangeError(`a topic of the cluster's channel is an integration's: ${JSON.stringify(topic)}`);
    const unsubscribe = this.local.subscribe(topic, handler);
    let subscription = this.subscriptions.get(topic);
    if (subscription === undefined) {
      // Whatever else the notice says: news is read from the log. A node's own news it has folded already.
      // Anything may come from the broker (not even an object): whatever it is, it only wakes.
      const heard = (notice: ChannelNotice | null) => {
        const own = typeof notice === 'object' && notice?.type === 'log.appended' && notice.node === this.node;
        if (!own) this.wake(integrationId);
      };
      subscription = { listeners: 0, unsubscribe: this.broker.subscribe(topic, heard) };
      this.subscriptions.set(topic, subscription);
    }
    subscription.listeners += 1;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      unsubscribe();
      if (--subscription.listeners === 0) {
        subscription.unsubscribe();
        this.subscriptions.delete(topic);
      }
    };
  }
}
