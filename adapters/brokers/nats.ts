/**
 * The channel on NATS: a core NATS subject per integration, `{namespace}.assistant_channel.{integration}`,
 * and a core subscription of it on a node while the node has a subscriber of the integration's topic.
 *
 * Why core NATS and not JetStream consumers filtered by subject: notices are news, never the truth (the
 * log is), so keeping them on the server's disk buys nothing a node's next look does not. A core
 * subscription costs one `SUB` line and an entry in the server's interest table, no state on disk and no
 * round trip; a node holding 1,000 integrations holds 1,000 of them, each sent once. A JetStream consumer
 * per integration is server state with its own heartbeats and flow control, created by an API request:
 * 1,000 per node, each recreated by another request after every reconnect, all nodes at once after a
 * server restart. On a reconnect the client sends its subscriptions again by itself; what was published
 * while a node was away from the server is lost to it, and its next look covers that. A publish while
 * the connection is away fails at once (reported once a spell) rather than waiting in the client's buffer.
 */
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { BrokerPubSub, type BrokerHealth, type BrokerOptions } from './broker.js';

export class NatsPubSub extends BrokerPubSub {
  /** The subscription of each integration this node listens to. */
  private readonly subscriptions = new Map<string, Subscription>();
  private watching: Promise<void> = Promise.resolve();
  /** Between the connection's `disconnect` and its `reconnect`. */
  private disconnected = false;

  private constructor(
    private readonly connection: NatsConnection,
    options: BrokerOptions,
  ) {
    super(options);
  }

  static async connect(options: BrokerOptions): Promise<NatsPubSub> {
    const url = new URL(options.url);
    const connection = await connect({
      servers: `${url.hostname}:${url.port || 4222}`,
      name: 'assistant-relay',
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      ...(url.username === '' ? {} : { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) }),
    });
    const broker = new NatsPubSub(connection, options);
    broker.watching = broker.watchStatus();
    return broker;
  }

  get health(): BrokerHealth {
    return { kind: 'nats', connected: !this.connection.isClosed() && this.connection.info !== undefined && !this.disconnected };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.subscriptions.clear();
    await this.connection.close();
    await this.watching;
  }

  /** Nothing is kept on the server: a namespace is gone with its nodes' subscriptions. */
  async remove(): Promise<void> {}

  protected async send(integrationId: string, text: string): Promise<void> {
    if (this.disconnected) throw new Error('the connection to the NATS server is away');
    this.connection.publish(this.subjectOf(integrationId), text);
  }

  protected listen(integrationId: string): void {
    const subscription = this.connection.subscribe(this.subjectOf(integrationId), {
      callback: (error, message) => {
        if (error === null) this.received(integrationId, message.string());
        else this.failed(error, `the subscription of ${integrationId}`);
      },
    });
    this.subscriptions.set(integrationId, subscription);
  }

  protected unlisten(integrationId: string): void {
    this.subscriptions.get(integrationId)?.unsubscribe();
    this.subscriptions.delete(integrationId);
  }

  /** An integration id is a UUID (broker.ts checks it): a subject token as it is. */
  private subjectOf(integrationId: string): string {
    return `${this.namespace}.assistant_channel.${integrationId}`;
  }

  private async watchStatus(): Promise<void> {
    for await (const status of this.connection.status()) {
      if (status.type === 'disconnect') {
        this.disconnected = true;
        this.failed(new Error('disconnected from the NATS server'), 'the NATS connection');
      } else if (status.type === 'reconnect') {
        this.disconnected = false;
        this.recovered();
      }
    }
  }
}
