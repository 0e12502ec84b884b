/**
 * One partition of a partitioned log, as a node holds it: where its fold stands, the decisions and reads
 * waiting on it, and the step under way. A partition's work is done one step at a time, as a shared log's
 * whole was before it was partitioned: a look at what other nodes committed when a read
 * waits for one, then the decisions queued meanwhile in one append; two partitions' steps run side by side.
 * And what a step sorts out: decisions that change nothing, events by partition, a fence refused.
 */
import { partitionOf, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { SERVICE_PARTITION } from '../../storage/partitions.js';
import type { Decision } from '../../machines/core/decider.js';

export interface Queued {
  readonly decide: () => Decision<BackendEvent, unknown>;
  /** Only the partition's owner may commit it (a timer's firing, a delivery, retention): its append names the owner's fence. */
  readonly owner: boolean;
  readonly resolve: (outcome: unknown) => void;
  readonly reject: (error: unknown) => void;
}

export interface Waiter {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

export class HeldPartition {
  /** The newest version folded. */
  folded = 0;
  /** The newest version dispatched: never dispatched again, even when folded again. */
  dispatched = 0;
  /** Events of an append that never committed may be in the fold: fold the partition again before its next step. */
  stale = false;
  /** Events folded since its newest snapshot: one is written when there are enough, or as it is let go. */
  sinceSnapshot = 0;
  /** When it was last asked for (a request, a stream, a look that found news): an idle one is let go first. */
  usedAt: number;
  queued: Queued[] = [];
  waiting: Waiter[] = [];
  /** The steps under way, while there are any. */
  working: Promise<void> | undefined;

  constructor(
    readonly partition: string,
    now: number,
  ) {
    this.usedAt = now;
  }

  /** Nothing waits on it and no step is under way. */
  get quiet(): boolean {
    return this.working === undefined && this.queued.length === 0 && this.waiting.length === 0;
  }

  /** Runs `step` for what is queued until nothing is; `working` is cleared in the same turn it finds nothing left, so no caller is left waiting. */
  work(step: (batch: Queued[], waiters: Waiter[]) => Promise<void>): void {
    this.working ??= (async () => {
      for (;;) {
        if (this.queued.length === 0 && this.waiting.length === 0) {
          this.working = undefined;
          return;
        }
        const batch = this.queued.splice(0);
        const waiters = this.waiting.splice(0);
        try {
          await step(batch, waiters);
        } catch (error) {
          for (const { reject } of [...batch, ...waiters]) reject(error);
        }
      }
    })();
  }
}

/**
 * Runs each decision on the fold as committed: one that changes nothing (a duplicate, a heartbeat with no
 * news, a deadline another node met) is answered now, without the partition's lock, since what it was
 * taken on is committed; the ones that change something are returned, to decide again under the lock.
 */
export function decidedAlready(batch: readonly Queued[]): Queued[] {
  const changes: Queued[] = [];
  for (const queued of batch) {
    let decision: Decision<BackendEvent, unknown>;
    try {
      decision = queued.decide();
    } catch (error) {
      queued.reject(error);
      continue;
    }
    if (decision.events.length === 0) queued.resolve(decision.outcome);
    else changes.push(queued);
  }
  return changes;
}

/** The decided events of the partition, and those of partitions they create (by partition). */
export function byPartition(partition: string, events: readonly BackendEvent[]) {
  const own: BackendEvent[] = [];
  const others = new Map<string, BackendEvent[]>();
  for (const event of events) {
    const of = partitionOf(event) ?? SERVICE_PARTITION;
    if (of === partition) own.push(event);
    else others.set(of, [...(others.get(of) ?? []), event]);
  }
  return { own, others };
}

/** The store refused an owner's append: its lease is another node's now. */
export function isFenced(error: unknown): boolean {
  return (error as { name?: string }).name === 'FencedError';
}
