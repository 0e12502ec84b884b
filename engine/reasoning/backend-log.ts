/**
 * The backend's log, as its engine uses it: decisions taken against the fold and appended, atomically;
 * every committed event handed to the after-commit dispatch once, in order; reads that wait until the fold
 * holds what was committed before them. Two logs stand behind it:
 *
 * - `LocalBackendLog`: the embedded SQLite log of one process (`db`). The fold is always current,
 *   so a decision runs at once; snapshots shorten a start.
 * - `PartitionedBackendLog` (partitioned-log.ts): PostgreSQL, partitioned by integration, appended to and
 *   folded by several nodes at once, each holding the partitions it serves.
 */
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import type { Decision } from '../../machines/core/decider.js';
import type { EventLog, StoredEvent } from '../../storage/event-log.js';
import { Appender } from '../core/append.js';
import type { Clock } from '../core/clock.js';
import { SnapshotWriter, restoreSnapshot, type SnapshotCodec } from '../core/snapshots.js';

/** What the engine gives its log to fold with and to dispatch to. */
export interface FoldParts<S> {
  /** How the fold is captured in a snapshot, and taken back from one. */
  readonly codec: SnapshotCodec<S>;
  /** Takes an event just decided into the fold, before it is committed. */
  fold(event: BackendEvent): void;
  /** Takes an event read from the log into the fold: committed, and not to be dispatched (a start). */
  foldCommitted(event: BackendEvent): void;
  /** Replaces the fold with a snapshot's state (a start), or with nothing (`undefined`: a shared log folds again from the start). */
  restore(state: S | undefined): void;
  /**
   * Committed events, in order, each batch once: `own` when this process decided them (it tells other
   * nodes), else another node's, read from a shared log.
   */
  dispatch(events: readonly BackendEvent[], own: boolean): void;
  /** A partitioned log's: the partition's state from its snapshot (undefined: none) in place of what the fold holds of it. */
  load(partition: string, state: S | undefined): void;
  /** A partitioned log's: the fold lets go of the partition. */
  evict(partition: string): void;
  /** A partitioned log's: the partition's state now, copied (what its snapshot stores). */
  capture(partition: string): S;
  /** What a snapshot of the partition costs, in the jobs it holds: a partition snapshots less often as it grows. */
  size(partition: string): number;
  /** Whether the integration's partition has timers to keep (open jobs, an online plugin): it needs an owner. */
  live(partition: string): boolean;
  /** Whether something on this node still uses the partition (its stream, a follower, a lease): it is not let go. */
  inUse(partition: string): boolean;
}

export interface DecideOptions {
  /** Only the integration's owner may commit this (a timer's firing, a delivery, retention): refused on any other node. */
  readonly owner?: boolean;
}

/** The options of a decision only the integration's owner may commit. */
export const OWNER: DecideOptions = { owner: true };

export interface BackendLog<S> {
  /** Folds what the log holds, then dispatches every commit from now on. */
  start(parts: FoldParts<S>): Promise<void>;
  /**
   * Runs `decide` against the fold of the partition (an integration's id, or `SERVICE_PARTITION`) as it
   * stands with everything committed before it, appends the events it
   * returns (folding them first, so that the next decision sees them), and resolves with its outcome once
   * they are committed. A decision of none resolves once what it was taken on is committed. `decide` must
   * be pure: it reads the fold and returns; it may be run as part of a batch with others.
   */
  decide<T>(partition: string, decide: () => Decision<BackendEvent, T>, options?: DecideOptions): Promise<T>;
  /**
   * Resolves once the fold holds every event of the partition (an integration's id, or `SERVICE_PARTITION`)
   * another node committed before the call, dispatched (at once for a log of one process).
   */
  caughtUp(partition: string): Promise<void>;
  /** Resolves once the fold holds the partition (loaded if it was not), as of at least the last look at it. */
  hold(partition: string): Promise<void>;
  /** Resolves once nothing this process appended is uncommitted: the fold holds only what the log holds. */
  settled(): Promise<void>;
  /** The position of the newest event the fold holds as committed. */
  readonly position: number;
  /** The committed events of one stream of the partition, oldest first (retention reads its own). */
  readStream(partition: string, stream: string): Promise<StoredEvent<BackendEvent>[]>;
  /** The position of the newest committed event of the partition's `stream`; 0 if it has none. */
  lastPositionOf(partition: string, stream: string): Promise<number>;
  /** Removes the events of the partition's `streams` (forgotten aggregates: retention) stored before `position`. */
  removeStreams(partition: string, streams: readonly string[], position: number): Promise<number>;
  /** Every integration the store holds, on a log whose fold holds only some of them; undefined when the fold holds every one. */
  storedIntegrations(): Promise<readonly string[] | undefined>;
  /** Retention made the fold smaller: a good moment for a snapshot. */
  compacted(): void;
  /** Settles what is appended and stops dispatching; the caller closes the log itself. */
  close(): Promise<void>;
}

export interface LocalLogOptions {
  readonly clock: Clock;
  readonly snapshotEveryEvents?: number;
  /** A log that can no longer be written: the process must restart from it. */
  readonly onFatal: (error: unknown) => void;
  readonly report: (error: unknown, context: { readonly what: string }) => void;
}

export class LocalBackendLog<S> implements BackendLog<S> {
  private snapshots: SnapshotWriter<BackendEvent, S> | undefined;
  private appender: Appender<BackendEvent> | undefined;

  constructor(
    private readonly log: EventLog<BackendEvent>,
    private readonly options: LocalLogOptions,
  ) {}

  async start(parts: FoldParts<S>): Promise<void> {
    // Before the dispatch subscribes: a snapshot is taken before any after-commit handler appends.
    this.snapshots = new SnapshotWriter(this.log, parts.codec, {
      clock: this.options.clock,
      ...(this.options.snapshotEveryEvents !== undefined ? { everyEvents: this.options.snapshotEveryEvents } : {}),
      failed: (error) => this.options.report(error, { what: 'writing a snapshot' }),
    });
    const restored = restoreSnapshot(this.log, parts.codec, this.options.report);
    if (restored !== undefined) parts.restore(restored.state);
    for (const { event } of this.log.read(restored?.position)) parts.foldCommitted(event);
    this.appender = new Appender(this.log, parts.fold, this.options.onFatal);
    this.log.onCommit((events) => parts.dispatch(events, true));
  }

  async decide<T>(_partition: string, decide: () => Decision<BackendEvent, T>): Promise<T> {
    const decision = decide();
    await this.appender!.commit(decision.events);
    return decision.outcome;
  }

  async caughtUp(_partition: string): Promise<void> {}

  async hold(_partition: string): Promise<void> {}

  get position(): number {
    return this.log.lastPosition;
  }

  settled(): Promise<void> {
    return this.log.settled();
  }

  // One process's log: positions are the log's, and a stream's name is unique in it, whatever its partition.
  async readStream(_partition: string, stream: string): Promise<StoredEvent<BackendEvent>[]> {
    return [...this.log.readStream(stream)];
  }

  async lastPositionOf(_partition: string, stream: string): Promise<number> {
    return this.log.lastPositionOf(stream);
  }

  async removeStreams(_partition: string, streams: readonly string[], position: number): Promise<number> {
    return this.log.removeStreams(streams, position);
  }

  async storedIntegrations(): Promise<undefined> {
    return undefined;
  }

  compacted(): void {
    this.snapshots?.soon();
  }

  async close(): Promise<void> {
    await this.log.settled();
    await this.snapshots?.close();
  }
}
