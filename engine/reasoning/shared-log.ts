/**
 * The backend's log shared by several nodes (PostgreSQL): each node folds every event, in the one order
 * of the log, and dispatches each batch once. A node decides with the log's head locked, after folding
 * what other nodes committed since its last look, so that every decision is taken on the whole truth, as
 * in one process; the decisions queued meanwhile go in one transaction (a group commit).
 *
 * Work on the log is done one step at a time: a look at what others committed, if reads wait for one (or
 * a second has passed: looks.ts), then the decisions queued meanwhile in one transaction. A step that fails
 * because PostgreSQL cannot be reached fails its callers (503 `store_unavailable` at the edge), and the
 * fold, which may hold events of a batch that never committed, is folded again from the log before the
 * next step, so the node resumes by itself once the database is back.
 *
 * A node snapshots the fold every `snapshotEveryEvents` events of its own commits and when it stops (one
 * table, the newest two kept: shared-snapshots.ts), so that a start, or a fold again, begins at the newest
 * snapshot instead of the log's start.
 */
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import type { Decision } from '../../machines/core/decider.js';
import type { StoredEvent } from '../../storage/event-log.js';
import { StoreBehindError } from '../../storage/postgres/connection.js';
import type { PgEventLog } from '../../storage/postgres/event-log.js';
import type { Clock } from '../core/clock.js';
import { SNAPSHOT_EVERY_EVENTS } from '../core/snapshots.js';
import type { BackendLog, FoldParts } from './backend-log.js';
import { LOOK_EVERY_MS, Looks } from './looks.js';
import { SharedSnapshots } from './shared-snapshots.js';

/** Enough for every request a node takes at once to have its decision waiting, and not so many that memory grows while the store is slow. */
const DEFAULT_MAX_QUEUED = 10_000;

export interface SharedLogOptions {
  /** Decisions waiting for the store at most: one more is refused at once (503 at the edge) rather than queued without bound. */
  readonly maxQueued?: number;
  readonly clock: Clock;
  /** A node snapshots its fold every `snapshotEveryEvents` events of its own commits. */
  readonly snapshotEveryEvents?: number;
  /** How often a node looks for what other nodes committed, whatever the broker says. Default 1 s. */
  readonly lookEveryMs?: number;
  readonly report: (error: unknown, context: { readonly what: string }) => void;
  /** Is handed each append to the store as it starts (an operator's timing of it: the engine keeps no time of its own). */
  readonly appending?: (append: Promise<unknown>) => void;
}

interface Queued {
  readonly decide: () => Decision<BackendEvent, unknown>;
  readonly resolve: (outcome: unknown) => void;
  readonly reject: (error: unknown) => void;
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

export class SharedBackendLog<S> implements BackendLog<S> {
  private parts: FoldParts<S> | undefined;
  /** The newest position folded. */
  private folded = 0;
  /** The newest position dispatched: never dispatched again, even when folded again. */
  private dispatched = 0;
  /** Events of a batch that never committed may be in the fold: fold again before the next step. */
  private stale = false;
  private queued: Queued[] = [];
  /** Decisions asked for and not yet answered: queued, or in the step under way. */
  private undecided = 0;
  private waiting: Waiter[] = [];
  /** The steps under way, while there are any. */
  private working: Promise<void> | undefined;

  private readonly maxQueued: number;
  private readonly appending: ((append: Promise<unknown>) => void) | undefined;
  private readonly snapshots: SharedSnapshots<S>;
  private readonly looks: Looks;

  constructor(
    private readonly log: PgEventLog<BackendEvent>,
    options: SharedLogOptions,
  ) {
    this.maxQueued = options.maxQueued ?? DEFAULT_MAX_QUEUED;
    this.appending = options.appending;
    this.snapshots = new SharedSnapshots(log, options.clock, options.snapshotEveryEvents ?? SNAPSHOT_EVERY_EVENTS, options.report);
    this.looks = new Looks(options.clock, options.lookEveryMs ?? LOOK_EVERY_MS, () => this.caughtUp());
  }

  get position(): number {
    return this.folded;
  }

  /** Decisions asked for and not yet answered: queued for the store, or in the step under way. */
  get undecidedCount(): number {
    return this.undecided;
  }

  async start(parts: FoldParts<S>): Promise<void> {
    this.parts = parts;
    this.folded = await this.snapshots.restoreNewest(parts, Infinity);
    await this.foldFrom(this.folded, false);
    this.dispatched = this.folded;
    this.looks.start();
  }

  decide<T>(_partition: string, decide: () => Decision<BackendEvent, T>): Promise<T> {
    if (this.undecided >= this.maxQueued) return Promise.reject(new StoreBehindError(this.undecided));
    this.undecided += 1;
    const decided = new Promise<T>((resolve, reject) => {
      this.queued.push({ decide, resolve: resolve as (outcome: unknown) => void, reject });
      this.work();
    });
    const settled = () => (this.undecided -= 1);
    decided.then(settled, settled);
    return decided;
  }

  caughtUp(_partition?: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.work();
    });
  }

  /** A step after the one under way: it ends with the fold holding only what is committed. */
  settled(): Promise<void> {
    return this.caughtUp();
  }

  readStream(_partition: string, stream: string): Promise<StoredEvent<BackendEvent>[]> {
    return this.log.readStream(stream);
  }

  lastPositionOf(_partition: string, stream: string): Promise<number> {
    return this.log.lastPositionOf(stream);
  }

  removeStreams(_partition: string, streams: readonly string[], position: number): Promise<number> {
    return this.log.removeStreams(streams, position);
  }

  compacted(): void {
    if (this.working === undefined && !this.stale) this.snapshot();
    else this.snapshots.due();
  }

  /** Settles the steps under way, then takes a snapshot of what this node committed since its last (a clean stop), and waits for it. */
  async close(): Promise<void> {
    this.looks.stop();
    while (this.working !== undefined) await this.working;
    if (this.snapshots.pending && !this.stale) this.snapshot();
    await this.snapshots.written();
  }

  /** A snapshot of the fold now: called when it holds exactly what is committed. */
  private snapshot(): void {
    this.snapshots.take(this.parts!.codec, this.folded);
  }

  private work(): void {
    this.working ??= this.steps();
  }

  private async steps(): Promise<void> {
    // `working` is cleared in the same turn the loop finds nothing left, so no caller is left waiting.
    for (;;) {
      if (this.queued.length === 0 && this.waiting.length === 0) {
        this.working = undefined;
        return;
      }
      const batch = this.queued.splice(0);
      const waiters = this.waiting.splice(0);
      try {
        if (this.stale) await this.refold();
        let changes = batch;
        // A read waits for a look without the lock; the decisions queued with it are answered on the same
        // look if they change nothing. Decisions alone go straight to the lock (one round trip fewer).
        if (waiters.length > 0 || batch.length === 0) {
          await this.foldFrom(this.folded, true);
          for (const waiter of waiters) waiter.resolve();
          changes = this.decidedAlready(batch);
        }
        if (changes.length > 0) await this.append(changes);
      } catch (error) {
        for (const { reject } of [...batch, ...waiters]) reject(error);
      }
    }
  }

  /** Folds (and, `dispatch`, dispatches) every committed event after `from`, page by page. */
  private async foldFrom(from: number, dispatch: boolean): Promise<void> {
    for (let page = await this.log.read(from); page.length > 0; page = await this.log.read(this.folded)) this.take(page, dispatch);
  }

  private take(committed: readonly StoredEvent<BackendEvent>[], dispatch: boolean): void {
    if (committed.length === 0) return;
    const events = committed.map(({ event }) => event);
    // Dispatched, a job event is marked committed by the dispatch itself (the job store's handler).
    for (const event of events) (dispatch ? this.parts!.fold : this.parts!.foldCommitted)(event);
    this.folded = committed.at(-1)!.position;
    if (!dispatch) return;
    this.dispatched = this.folded;
    this.parts!.dispatch(events, false);
  }

  /**
   * Runs each decision on the fold as committed: one that changes nothing (a duplicate, a heartbeat with no
   * news, a deadline another node met) is answered now, without the lock, since what it was taken on is
   * committed; the ones that change something are left to decide again under the lock.
   */
  private decidedAlready(batch: readonly Queued[]): Queued[] {
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

  /** Decides the batch with the head locked, after what others committed; one transaction for all. */
  private async append(batch: readonly Queued[]): Promise<void> {
    const outcomes: Array<{ ok: true; outcome: unknown } | { ok: false; error: unknown }> = [];
    let appended: StoredEvent<BackendEvent>[];
    try {
      const append = this.log.append(this.folded, (committed) => {
        this.take(committed, true);
        outcomes.length = 0;
        const events: BackendEvent[] = [];
        for (const { decide } of batch) {
          try {
            const decision = decide();
            for (const event of decision.events) this.parts!.fold(event);
            events.push(...decision.events);
            outcomes.push({ ok: true, outcome: decision.outcome });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
        // From here the fold is ahead of the log until the commit is known.
        if (events.length > 0) this.stale = true;
        return events;
      });
      this.appending?.(append);
      appended = await append;
    } catch (error) {
      for (const { reject } of batch) reject(error);
      return;
    }
    this.stale = false;
    if (appended.length > 0) {
      this.folded = this.dispatched = appended.at(-1)!.position;
      this.parts!.dispatch(
        appended.map(({ event }) => event),
        true,
      );
      this.snapshots.committed(appended.length, this.parts!.codec, this.folded);
    }
    batch.forEach(({ resolve, reject }, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) resolve(outcome.outcome);
      else reject(outcome.error);
    });
  }

  /** The fold went ahead of the log (a batch whose commit failed): fold it again from a snapshot or the start, dispatching only what is new. */
  private async refold(): Promise<void> {
    // Not from a snapshot past what this node dispatched: what lies between would never be dispatched.
    this.folded = await this.snapshots.restoreNewest(this.parts!, this.dispatched);
    for (let page = await this.log.read(this.folded); page.length > 0; page = await this.log.read(this.folded)) {
      const known = page.filter(({ position }) => position <= this.dispatched);
      this.take(known, false);
      this.take(page.slice(known.length), true);
    }
    this.stale = false;
  }
}
