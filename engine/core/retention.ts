/**
 * Retention: a long-running host or backend must not grow without bound. Shortly after a start and then
 * every hour, a pass forgets what ended more than `retentionMs` ago: it appends an event saying so, which
 * the fold takes like any other (the projection drops what it names), so that folding the log with or
 * without the forgotten events ends in the same state. Once that event is committed, the forgotten
 * aggregates' events before it are removed from the log, and a snapshot is taken of the smaller state.
 * What a pass forgets is the host's, the backend's or the plugin's own (chat/retention.ts,
 * reasoning/retention.ts, adapters/plugin/retention.ts).
 *
 * The backend's and the plugin's forgetting events are a stream of their own, and each carries what the
 * fold still needs of the ones before it (stream positions, dedupe entries): once the streams an older
 * one named are removed it says nothing more, and it goes too (`pruneForgettings`), so that forgetting
 * leaves no trail that grows with everything ever forgotten.
 */
import type { LogRecord, StoredEvent } from '../../storage/event-log.js';
import type { Clock, TimerHandle } from './clock.js';

/** Seven days: long enough to debug last week's fault from the log, short enough to keep a busy log small. */
export const DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
/** How often retention looks for what to forget. */
export const RETENTION_CHECK_MS = 60 * 60 * 1000;
/** Aggregates named in one event: keeps each event small; a pass appends as many as it needs. */
export const FORGOTTEN_PER_EVENT = 1_000;

export interface RetentionOptions {
  readonly clock: Clock;
  readonly retentionMs: number;
  /** One pass, forgetting what ended before the given time; resolves with how much it forgot. */
  readonly pass: (endedBefore: number) => Promise<number>;
  /** The log shrank: a snapshot of the smaller state is due. */
  readonly compacted: () => void;
  readonly report: (error: unknown) => void;
}

export class Retention {
  private timer: TimerHandle | undefined;
  private stopped = false;
  private running: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: RetentionOptions) {}

  /** Arms the first pass (at once, after the start's own work) and every one after it; off for an infinite retention. */
  start(): void {
    if (Number.isFinite(this.options.retentionMs)) this.arm(0);
  }

  /** No pass after this; resolves once a pass under way is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    await this.running;
  }

  /** One pass now. Resolves with how much was forgotten. */
  async run(): Promise<number> {
    const forgotten = await this.options.pass(this.options.clock.now() - this.options.retentionMs);
    if (forgotten > 0) this.options.compacted();
    return forgotten;
  }

  private arm(delayMs: number): void {
    if (this.stopped) return;
    this.timer = this.options.clock.setTimeout(() => {
      this.running = this.run().then(
        () => this.arm(RETENTION_CHECK_MS),
        (error: unknown) => {
          this.options.report(error);
          this.arm(RETENTION_CHECK_MS);
        },
      );
    }, delayMs);
  }
}

/** What one forgetting event named: the streams whose events go, and how many aggregates it forgot. */
export interface ForgottenBatch {
  readonly streams: readonly string[];
  readonly count: number;
}

/**
 * Forgets batch after batch: `next` appends the next forgetting event and resolves, once it is committed,
 * with what it named (undefined: nothing left); `remove` then removes those streams' events. Resolves
 * with how many were forgotten.
 */
export async function forgetInBatches<B extends ForgottenBatch>(
  next: () => Promise<B | undefined>,
  remove: (batch: B) => unknown,
): Promise<number> {
  let forgotten = 0;
  for (let batch = await next(); batch !== undefined; batch = await next()) {
    await remove(batch);
    forgotten += batch.count;
    if (batch.count < FORGOTTEN_PER_EVENT) break;
  }
  return forgotten;
}

/**
 * Removes the forgetting events (`forgettings`, oldest first) that a newer one stands for: every one but
 * the newest whose time is before `keptSince`. What each named is removed first (`removeNamed`: again, for
 * a pass cut off between its event and its removal, whose streams would otherwise come back in a fold
 * without it); then `removeBefore` removes the forgetting events before the given position.
 */
export async function pruneForgettings<E extends LogRecord>(
  forgettings: readonly StoredEvent<E>[],
  keptSince: number,
  removeNamed: (forgetting: StoredEvent<E>) => unknown,
  removeBefore: (position: number) => unknown,
): Promise<void> {
  let gone = 0;
  while (gone < forgettings.length - 1 && forgettings[gone]!.event.at < keptSince) gone += 1;
  if (gone === 0) return;
  for (const forgetting of forgettings.slice(0, gone)) await removeNamed(forgetting);
  await removeBefore(forgettings[gone]!.position);
}
