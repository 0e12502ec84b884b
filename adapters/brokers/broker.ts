/**
 * What the two brokers (NATS, Redis Streams) share as the backend's `PubSub`: a topic is an integration's
 * (`assistant_channel:{integration_id}`, the id a UUID), and a node subscribes at the broker only to the
 * topics it has subscribers of: the first subscriber of a topic starts the broker's subscription of it,
 * the last one leaving stops it, so a node hears nothing of the integrations it holds no stream or
 * follower of. A publish is sent and forgotten, its failure reported once per outage. Notices are news,
 * never the truth (the shared log is): a notice lost while the broker is away costs latency until the
 * nodes' next look.
 */
import { isUuid } from '../../protocol/ids.js';
import {
  LocalPubSub,
  assistantChannel,
  integrationOf,
  type ChannelNotice,
  type NoticeHandler,
  type PubSub,
} from '../../engine/reasoning/pubsub.js';

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

/**
 * The integration of a topic on the broker, refused unless its id is a UUID in lowercase (as the backend
 * makes them): it becomes a subject token or part of a key as it is, so it can never be a wildcard.
 */
export function integrationOfTopic(topic: string): string {
  const integrationId = integrationOf(topic);
  if (integrationId === undefined || !isUuid(integrationId) || integrationId !== integrationId.toLowerCase())
    throw new RangeError(`a topic on the broker is an integration's, its id a lowercase UUID: ${JSON.stringify(topic)}`);
  return integrationId;
}

export interface BrokerHealth {
  readonly kind: 'nats' | 'redis';
  readonly connected: boolean;
}

export abstract class BrokerPubSub implements PubSub {
  protected readonly namespace: string;
  private readonly local: LocalPubSub;
  /** Local subscribers of each topic subscribed at the broker. */
  private readonly listeners = new Map<string, number>();
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
    const integrationId = integrationOfTopic(topic);
    if (this.closed) return;
    this.send(integrationId, JSON.stringify(notice)).then(
      () => this.recovered(),
      (error: unknown) => this.failed(error, 'publishing on the channel'),
    );
  }

  subscribe(topic: string, handler: NoticeHandler): () => void {
    const integrationId = integrationOfTopic(topic);
    const unsubscribe = this.local.subscribe(topic, handler);
    const listeners = this.listeners.get(topic) ?? 0;
    this.listeners.set(topic, listeners + 1);
    if (listeners === 0 && !this.closed) this.listen(integrationId);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      unsubscribe();
      const rest = (this.listeners.get(topic) ?? 1) - 1;
      if (rest > 0) return void this.listeners.set(topic, rest);
      this.listeners.delete(topic);
      if (!this.closed) this.unlisten(integrationId);
    };
  }

  /** The integrations this node is subscribed to at the broker. */
  get subscribed(): string[] {
    return [...this.listeners.keys()].map((topic) => integrationOf(topic)!);
  }

  abstract close(): Promise<void>;

  /** Removes the namespace's channel from the broker (a deployment taken down, a test done); call before `close`. */
  abstract remove(): Promise<void>;

  /** Sends one notice on the integration's subject or key, resolving once it is sent. */
  protected abstract send(integrationId: string, text: string): Promise<void>;

  /** Starts the broker's subscription of the integration's subject or key. */
  protected abstract listen(integrationId: string): void;

  /** Stops it: the integration's last subscriber on this node left. */
  protected abstract unlisten(integrationId: string): void;

  /** A notice read from the broker, for this node's subscribers of the integration's topic. */
  protected received(integrationId: string, text: string): void {
    this.recovered();
    const topic = assistantChannel(integrationId);
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
