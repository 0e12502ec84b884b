/**
 * What the two brokers (NATS JetStream, Redis Streams) share as the backend's `PubSub`: every node reads
 * all of the channel's notices from the broker in one ordered stream and hands each to its own
 * subscribers of the notice's topic (so a node needs one consumer, not one per integration); a publish
 * is sent and forgotten, its failure reported once per outage. Notices are news, never the truth (the
 * shared log is): a notice lost while the broker is away costs latency until the nodes' next look.
 */
import { LocalPubSub, type ChannelNotice, type NoticeHandler, type PubSub } from '../../engine/reasoning/pubsub.js';

export interface BrokerOptions {
  /** `nats://host:port` or `redis://host:port` */
  readonly url: string;
  /** Prefix of every subject or key, so that deployments (and tests) sharing a broker do not meet. Default `assistant_relay`. */
  readonly namespace?: string;
  /** A failure nobody awaits: reported once when the broker goes away, and once when it is back. */
  readonly report?: (error: unknown, what: string) => void;
}

/** A name part for subjects and keys: letters, digits, `_` and `-`. */
export const NAMESPACE = /^[A-Za-z0-9_-]{1,64}$/;

/** The namespace of a service that names none. */
export const DEFAULT_NAMESPACE = 'assistant_relay';

export interface BrokerHealth {
  readonly kind: 'nats' | 'redis';
  readonly connected: boolean;
}

export abstract class BrokerPubSub implements PubSub {
  protected readonly namespace: string;
  private readonly local: LocalPubSub;
  private readonly report: (error: unknown, what: string) => void;
  private failing = false;
  protected closed = false;

  constructor(options: BrokerOptions) {
    this.namespace = options.namespace ?? DEFAULT_NAMESPACE;
    if (!NAMESPACE.test(this.namespace))
      throw new RangeError(`a broker namespace must match ${NAMESPACE}: ${JSON.stringify(this.namespace)}`);
    this.report = options.report ?? ((error, what) => process.emitWarning(`assistant-relay broker: ${what}: ${String(error)}`));
    this.local = new LocalPubSub((error, topic) => this.report(error, `a subscriber of ${topic}`));
  }

  abstract readonly health: BrokerHealth;

  publish(topic: string, notice: ChannelNotice): void {
    if (this.closed) return;
    this.send(topic, JSON.stringify(notice)).then(
      () => this.recovered(),
      (error: unknown) => this.failed(error, 'publishing on the channel'),
    );
  }

  subscribe(topic: string, handler: NoticeHandler): () => void {
    return this.local.subscribe(topic, handler);
  }

  abstract close(): Promise<void>;

  /** Removes the namespace's channel from the broker (a deployment taken down, a test done); call before `close`. */
  abstract remove(): Promise<void>;

  /** Sends one notice, resolving once the broker has it. */
  protected abstract send(topic: string, text: string): Promise<void>;

  /** A notice read from the broker, for this node's subscribers of its topic. */
  protected received(topic: string, text: string): void {
    this.recovered();
    let notice: ChannelNotice;
    try {
      notice = JSON.parse(text) as ChannelNotice;
    } catch (error) {
      this.report(error, `a notice on ${topic} that is not JSON`);
      return;
    }
    this.local.publish(topic, notice);
  }

  /** Reported once a spell: a broker that is away fails every publish and read until it is back. */
  protected failed(error: unknown, what: string): void {
    if (this.failing || this.closed) return;
    this.failing = true;
    this.report(error, `${what} failed; nodes learn of each other's commits at their next look until the broker is back`);
  }

  protected recovered(): void {
    if (!this.failing) return;
    this.failing = false;
    this.report(new Error('the broker is back'), 'the channel');
  }
}

export const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
