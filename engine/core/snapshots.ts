/**
 * Snapshots of a fold, keyed by log position, so that a start folds only the events after the newest
 * good one instead of the whole history.
 *
 * - Taken at a commit (the first listener of the log's commits, before any after-commit handler can
 *   append), when the fold holds exactly what is committed up to `log.lastPosition`. Taking is a shallow
 *   copy (the states folded are immutable values); encoding and writing happen later, off the commit path.
 * - One every `everyEvents` committed events, or, if more, once the events since the last outnumber
 *   its size in bytes over `BYTES_AN_EVENT` (up to `MOST_EVENTS`): a snapshot costs in proportion to the
 *   state, so a large state is snapshotted more seldom and its share of each event's CPU stays near a
 *   small one's. And one at a clean close, so the next start folds nothing.
 * - At a start, the newest snapshot that is intact (storage checks its digests), decodes, and was folded
 *   under the same rules (the codec says) is used; each one passed over is reported with its reason, never
 *   trusted. No good snapshot: the whole log is folded, as before snapshots existed.
 */
import type { EventLog, LogRecord } from '../../storage/event-log.js';
import type { Clock } from './clock.js';

export interface SnapshotCodec<S> {
  /** The fold's state as it stands, copied where the fold mutates in place. */
  capture(): S;
  /** The snapshot's text, in parts that each take little time to make. */
  encode(state: S): Iterable<string>;
  /** The state a snapshot holds; throws, saying why, for one this process cannot use. */
  decode(data: string): S;
}

/** Committed events between two snapshots, at the least. */
export const SNAPSHOT_EVERY_EVENTS = 50_000;

/**
 * Bytes of the last snapshot for each event before the next, up to `MOST_EVENTS`. 100 Form A sessions
 * that have each run some thousands of turns snapshot to about 12 MB (their task ids, ledgers, backlogs
 * and memories): every 190,000 events instead of 50,000, where the snapshots had been a tenth of the
 * engine's CPU.
 */
const BYTES_AN_EVENT = 64;
/** However large the state, a crash leaves at most this many events after the newest snapshot to fold (about a second). */
const MOST_EVENTS = 250_000;

/** How long one turn of the event loop may spend encoding a snapshot before it yields to the rest. */
const SLICE_MS = 8;

export interface Restored<S> {
  readonly position: number;
  readonly state: S;
}

/**
 * The newest usable snapshot. Each one passed over is reported (`using the snapshot at position P failed`,
 * with why) to the process's failure report, never trusted.
 */
export function restoreSnapshot<E extends LogRecord, S>(
  log: EventLog<E>,
  codec: SnapshotCodec<S>,
  report: (error: unknown, context: { readonly what: string }) => void,
): Restored<S> | undefined {
  for (const snapshot of log.snapshots()) {
    const passedOver = (reason: string) => report(new Error(reason), { what: `using the snapshot at position ${snapshot.position}` });
    if (snapshot.problem !== undefined) {
      passedOver(snapshot.problem);
      continue;
    }
    try {
      return { position: snapshot.position, state: codec.decode(snapshot.data) };
    } catch (error) {
      passedOver((error as Error).message);
    }
  }
  return undefined;
}

export interface SnapshotWriterOptions {
  readonly clock: Clock;
  readonly everyEvents?: number;
  /** A snapshot that could not be written: the log is still the truth, so this is reported, not fatal. */
  readonly failed: (error: unknown) => void;
}

/** Joins the parts, yielding to the event loop every `SLICE_MS`: a large state must not stall serving. */
export async function inSlices(parts: Iterable<string>): Promise<string> {
  const done: string[] = [];
  let sliceEnd = performance.now() + SLICE_MS;
  for (const part of parts) {
    done.push(part);
    if (performance.now() < sliceEnd) continue;
    await new Promise((resolve) => setImmediate(resolve));
    sliceEnd = performance.now() + SLICE_MS;
  }
  return done.join('');
}

export class SnapshotWriter<E extends LogRecord, S> {
  private sinceLast = 0;
  private writing: Promise<void> = Promise.resolve();
  private readonly everyEvents: number;
  /** Events before the next snapshot: `everyEvents`, or more after a large one. */
  private interval: number;

  constructor(
    private readonly log: EventLog<E>,
    private readonly codec: SnapshotCodec<S>,
    private readonly options: SnapshotWriterOptions,
  ) {
    this.everyEvents = this.interval = options.everyEvents ?? SNAPSHOT_EVERY_EVENTS;
    // Registered before the after-commit handlers: nothing has been appended since this batch was committed.
    log.onCommit((events) => this.committed(events.length));
  }

  private committed(count: number): void {
    this.sinceLast += count;
    if (this.sinceLast < this.interval) return;
    this.take();
  }

  private take(): void {
    this.sinceLast = 0;
    const position = this.log.lastPosition;
    const state = this.codec.capture();
    const at = this.options.clock.now();
    this.writing = this.writing.then(async () => {
      try {
        const text = await inSlices(this.codec.encode(state));
        this.log.writeSnapshot(position, text, at);
        this.interval = Math.max(this.everyEvents, Math.min(MOST_EVENTS, Math.ceil(text.length / BYTES_AN_EVENT)));
      } catch (error) {
        this.options.failed(error);
      }
    });
  }

  /** Takes one as soon as the fold holds only what is committed: now if it does, else at the next commit. */
  soon(): void {
    if (this.log.pending === 0) this.take();
    else this.sinceLast = this.interval;
  }

  /** Waits for snapshots being written, then takes one of what was committed since the last (call once the fold is settled and before the log closes). */
  async close(): Promise<void> {
    if (this.sinceLast > 0 && this.log.pending === 0) this.take();
    await this.writing;
  }
}
