/**
 * The backend's `PubSub` seam: a committed change of a job is published on its integration's topic,
 * `assistant_channel:{integration_id}`, and whoever holds that integration's stream or follows one of its
 * jobs hears of it there. A notice only says which job changed and how: the listener reads the job from
 * the `JobStore`. Notices are plain JSON, so a broker between processes (NATS, Redis) can carry them as
 * they are. The default is in-process: the after-commit dispatch publishes, listeners are called at once.
 * Several nodes share a channel over a broker (channel.ts): there the topic also carries the shared log's
 * progress between nodes.
 */
import type { JobEvent } from '../../machines/reasoning/job-events.js';

/** A job changed: the event that changed it, by type, with the stream frame id a delivery took. Its `job_id` is the topic's integration's (another integration's job of that id is another job, on another topic). */
export type JobNotice =
  | { readonly job_id: string; readonly type: 'job.delivered'; readonly seq: number }
  | { readonly job_id: string; readonly type: Exclude<JobEvent['type'], 'job.delivered'> };

/** The notice of a committed job event. */
export function noticeOf(event: JobEvent): JobNotice {
  return event.type === 'job.delivered'
    ? { job_id: event.job_id, type: event.type, seq: event.seq }
    : { job_id: event.job_id, type: event.type };
}

/** A node committed events of the integration to the shared log: a node with a stream or a follower of it folds them now, not at its next look. */
export interface LogAppended {
  readonly type: 'log.appended';
  /** The node that committed (its epoch): it folded its own commit already, and passes over its own news. */
  readonly node?: string;
}

export type ChannelNotice = JobNotice | LogAppended;

export type NoticeHandler = (notice: ChannelNotice) => void;

export interface PubSub {
  /** Publishes a notice to every subscriber of the topic, in the order published. */
  publish(topic: string, notice: ChannelNotice): void;
  /** Subscribes to a topic; the function returned unsubscribes (a notice published after it is not heard). */
  subscribe(topic: string, handler: NoticeHandler): () => void;
  /**
   * Only a channel that reaches other nodes sharing the log (channel.ts) has it: tells them that this node
   * committed events of the integration (`log.appended`). One of this process alone has no one to tell.
   */
  announce?(integrationId: string): void;
}

const ASSISTANT_CHANNEL = 'assistant_channel:';

/** The topic of an integration's jobs (6.1). */
export function assistantChannel(integrationId: string): string {
  return `${ASSISTANT_CHANNEL}${integrationId}`;
}

/** The integration whose topic it is (the inverse of `assistantChannel`); undefined for a topic of no integration. */
export function integrationOf(topic: string): string | undefined {
  return topic.startsWith(ASSISTANT_CHANNEL) && topic.length > ASSISTANT_CHANNEL.length ? topic.slice(ASSISTANT_CHANNEL.length) : undefined;
}

/** One process: subscribers are called in the publisher's step; a handler that throws is reported and stops no other. */
export class LocalPubSub implements PubSub {
  private readonly topics = new Map<string, Set<NoticeHandler>>();

  constructor(
    private readonly onError: (error: unknown, topic: string) => void = (error, topic) =>
      process.emitWarning(`assistant-relay: a subscriber of ${topic} failed: ${String(error)}`),
  ) {}

  publish(topic: string, notice: ChannelNotice): void {
    for (const handler of [...(this.topics.get(topic) ?? [])]) {
      try {
        handler(notice);
      } catch (error) {
        this.onError(error, topic);
      }
    }
  }

  subscribe(topic: string, handler: NoticeHandler): () => void {
    // Each subscription is its own entry, so the same handler subscribed twice is heard twice and unsubscribed once.
    const entry: NoticeHandler = (notice) => handler(notice);
    const handlers = this.topics.get(topic) ?? new Set<NoticeHandler>();
    this.topics.set(topic, handlers.add(entry));
    return () => {
      handlers.delete(entry);
      if (handlers.size === 0 && this.topics.get(topic) === handlers) this.topics.delete(topic);
    };
  }
}
