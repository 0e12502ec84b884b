/**
 * The backend engine's loop: how its parts follow its log. Every event is folded into the projection and
 * the job store; every committed one, this node's or another's, goes to the after-commit handlers in
 * their order (a job's timers and an integration's offline deadline only on the node that owns it); and a
 * channel that reaches other nodes is told of this node's commits, so that they fold them at once. On a
 * partitioned log, a partition is loaded into the fold and let go of whole.
 */
import { isJobEvent, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { SERVICE_PARTITION } from '../../storage/partitions.js';
import { AfterCommit } from '../core/after-commit.js';
import type { FailureContext } from '../core/failures.js';
import type { FoldParts } from './backend-log.js';
import type { HeldStreams } from './held-streams.js';
import type { Integrations } from './integrations.js';
import type { LogJobStore } from './job-store.js';
import type { JobTimers } from './job-timers.js';
import type { Pairings } from './pairings.js';
import type { BackendProjection } from './projection.js';
import { emptyState, type BackendState } from './backend-state.js';
import type { JobFollowers } from './followers.js';
import type { Ownership } from './ownership.js';
import type { JobStreams } from './streams.js';
import { assistantChannel, noticeOf, type PubSub } from './pubsub.js';
import { backendSnapshotCodec } from './snapshot.js';

/** The parts that follow the log. */
export interface LoopParts {
  readonly projection: BackendProjection;
  readonly store: LogJobStore;
  readonly timers: JobTimers;
  readonly held: HeldStreams;
  readonly integrations: Integrations;
  readonly pairings: Pairings;
  readonly pubsub: PubSub;
  readonly report: (error: unknown, context: FailureContext) => void;
  /** Which integrations this node owns: their timers run here. */
  readonly ownership: Ownership;
  readonly streams: JobStreams;
  readonly followers: JobFollowers;
  /** The embedder's listeners of committed batches (an operator's counters). */
  readonly listeners: ReadonlySet<CommitListener>;
}

/** Hears a committed batch: `own` when this node decided it, else another node's, read from a shared log. */
export type CommitListener = (events: readonly BackendEvent[], own: boolean) => void;

/** What the engine's log folds with and dispatches to. */
export function backendLoop(parts: LoopParts): FoldParts<BackendState> {
  const { projection, store, timers, held, integrations, pairings, pubsub, report, listeners, ownership, streams, followers } = parts;
  const afterCommit = new AfterCommit<BackendEvent>((error, what, event) =>
    report(error, { what: event === undefined ? what : `${what} (${event.type})` }),
  );
  afterCommit.add({ name: 'integration streams', event: (event) => held.committed(event) });
  const owned = (event: BackendEvent) => 'integration_id' in event && ownership.owns(event.integration_id);
  afterCommit.add({ name: 'offline deadlines', event: (event) => owned(event) && integrations.committed(event) });
  afterCommit.add({ name: 'pairing expiries', event: (event) => pairings.committed(event) });
  // The store first: a notice's listener reads the job as this event left it.
  afterCommit.add({
    name: 'job store',
    event: (event) => (isJobEvent(event) ? store.committed(event) : event.type === 'backend.forgotten' && store.forgotten(event)),
  });
  // Once committed: the job's timers follow it, and its integration's topic hears of it.
  afterCommit.add({
    name: 'jobs',
    event: (event) => {
      if (!isJobEvent(event)) return;
      if (owned(event)) timers.committed(event);
      pubsub.publish(assistantChannel(event.integration_id), noticeOf(event));
    },
  });
  return {
    ...projectionParts(projection, store),
    inUse: (partition) => ownership.owns(partition) || streams.holds(partition) || followers.follows(partition),
    dispatch: (events, own) => {
      afterCommit.dispatch(events);
      for (const listener of listeners) {
        try {
          listener(events, own);
        } catch (error) {
          report(error, { what: 'a listener of committed events' });
        }
      }
      if (!own) return;
      const touched = new Set(events.flatMap((event) => ('integration_id' in event ? [event.integration_id] : [])));
      for (const id of touched) pubsub.announce?.(id);
    },
  };
}

/** How the projection and the job store fold the log, whole or a partition at a time: the parts of `FoldParts` that follow the fold alone. */
export function projectionParts(projection: BackendProjection, store: LogJobStore): Omit<FoldParts<BackendState>, 'dispatch' | 'inUse'> {
  const fold = (event: BackendEvent) => {
    projection.apply(event);
    if (isJobEvent(event)) store.folded(event);
  };
  return {
    codec: backendSnapshotCodec(projection),
    fold,
    foldCommitted: (event) => {
      fold(event);
      if (isJobEvent(event)) store.committed(event);
      // Retention may have left a forgotten job's events in the log (their removal comes after the commit).
      else if (event.type === 'backend.forgotten') store.forgotten(event);
    },
    restore: (state) => {
      projection.restore(state ?? emptyState());
      store.restored();
    },
    load: (partition, state) => {
      if (partition === SERVICE_PARTITION) {
        projection.evictService();
        if (state !== undefined) projection.merge(state);
        return;
      }
      // The partition's own jobs, not a walk over every job held: a node may hold thousands of partitions.
      const before = projection.jobsOf(partition);
      projection.evict(partition);
      if (state !== undefined) projection.merge(state);
      store.restoredPartition(partition, before);
    },
    evict: (partition) => {
      const before = projection.jobsOf(partition);
      projection.evict(partition);
      store.restoredPartition(partition, before);
    },
    capture: (partition) => (partition === SERVICE_PARTITION ? projection.service() : projection.partition(partition)),
    live: (partition) => projection.live(partition),
    size: (partition) => projection.jobCount(partition),
  };
}
