/**
 * The backend's log on a store several nodes share, partitioned by integration (storage/partitions.ts).
 * A node holds the partitions it serves: the service's (pairings, tickets) from its start, an
 * integration's once a request, a stream, a follower or a lease brings it (its snapshot, then what came
 * after), and lets it go when it is idle (partition-holds.ts). It folds only what it holds, and decides in
 * each partition under that partition's lock alone, after folding what other nodes committed to it, so a
 * decision is taken on the whole truth of its integration and two integrations never wait on each other.
 *
 * What only an integration's owner may do (its timers' firings, deliveries on its stream, its retention)
 * is appended with the owner's fence: a node that lost its lease commits none of it (ownership.ts).
 * A decision that creates another partition (a pairing completes, and its integration is born) appends
 * to both at once.
 *
 * A step that fails because PostgreSQL cannot be reached fails its callers (503 `store_unavailable` at
 * the edge); the partition, whose fold may hold events of an append that never committed, is folded again
 * before its next step.
 */
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import type { Decision } from '../../machines/core/decider.js';
import type { StoredEvent } from '../../storage/event-log.js';
import { SERVICE_PARTITION, type Fence, type PartitionEvent, type PartitionedStore } from '../../storage/partitions.js';
import { StoreBehindError } from '../../storage/postgres/connection.js';
import type { Clock } from '../core/clock.js';
import { NotOwnerError } from '../core/failures.js';
import type { BackendLog, DecideOptions, FoldParts } from './backend-log.js';
import type { BackendState } from './backend-state.js';
import { LOOK_EVERY_MS, Looks } from './looks.js';
import type { Ownership } from './ownership.js';
import { PartitionHolds, type HoldOptions } from './partition-holds.js';
import { HeldPartition, byPartition, decidedAlready, isFenced, type Queued, type Waiter } from './partition-steps.js';

/** Enough for every request a node takes at once to have its decision waiting, and not so many that memory grows while the store is slow. */
const DEFAULT_MAX_QUEUED = 10_000;

export interface PartitionedLogOptions extends HoldOptions {
  /** This node: its epoch, recorded beside each event it commits. */
  readonly node: string;
  readonly clock: Clock;
  readonly ownership: Ownership;
  /** Decisions waiting for the store at most: one more is refused at once (503 at the edge) rather than queued without bound. */
  readonly maxQueued?: number;
  /** How often a node looks for what other nodes committed to the partitions it holds, whatever the broker says. Default 1 s. */
  readonly lookEveryMs?: number;
  readonly report: (error: unknown, context: { readonly what: string }) => void;
  /** Is handed each append to the store as it starts (an operator's timing of it). */
  readonly appending?: (append: Promise<unknown>) => void;
}

export class PartitionedBackendLog implements BackendLog<BackendState> {
  private parts: FoldParts<BackendState> | undefined;
  private undecided = 0;
  private readonly holds: PartitionHolds;
  private readonly looks: Looks;
  private readonly maxQueued: number;

  constructor(
    private readonly store: PartitionedStore<BackendEvent>,
    private readonly options: PartitionedLogOptions,
  ) {
    this.maxQueued = options.maxQueued ?? DEFAULT_MAX_QUEUED;
    this.holds = new PartitionHolds(store, options, (held, page, dispatch) => this.take(held, page, dispatch));
    this.looks = new Looks(options.clock, options.lookEveryMs ?? LOOK_EVERY_MS, () => this.look());
  }

  /** The service partition's version: how far this node has folded what is the whole service's. */
  get position(): number {
    return this.holds.get(SERVICE_PARTITION)?.folded ?? 0;
  }

  /** Decisions asked for and not yet answered: queued for the store, or in a step under way. */
  get undecidedCount(): number {
    return this.undecided;
  }

  /** Events committed to the partitions this node holds that its fold has not taken in yet (one query). */
  async lag(): Promise<number> {
    const held = this.holds.all();
    const versions = await this.store.versions(held.map(({ partition }) => partition));
    return held.reduce((lag, { partition, folded }) => lag + Math.max(0, (versions.get(partition) ?? 0) - folded), 0);
  }

  /** The integrations whose partitions this node holds now. */
  heldIntegrations(): string[] {
    return this.holds.integrations();
  }

  async start(parts: FoldParts<BackendState>): Promise<void> {
    this.parts = parts;
    this.holds.start(parts);
    await this.holds.hold(SERVICE_PARTITION);
    this.looks.start();
  }

  decide<T>(partition: string, decide: () => Decision<BackendEvent, T>, options: DecideOptions = {}): Promise<T> {
    if (this.undecided >= this.maxQueued) return Promise.reject(new StoreBehindError(this.undecided));
    this.undecided += 1;
    const decided = this.holds.hold(partition).then(
      (held) =>
        new Promise<T>((resolve, reject) => {
          const owner = options.owner === true;
          held.queued.push({ decide, owner, resolve: resolve as (outcome: unknown) => void, reject });
          held.work((batch, waiters) => this.step(held, batch, waiters));
        }),
    );
    const settled = () => (this.undecided -= 1);
    decided.then(settled, settled);
    return decided;
  }

  async caughtUp(partition: string): Promise<void> {
    const held = await this.holds.hold(partition);
    await new Promise<void>((resolve, reject) => {
      held.waiting.push({ resolve, reject });
      held.work((batch, waiters) => this.step(held, batch, waiters));
    });
  }

  async hold(partition: string): Promise<void> {
    await this.holds.hold(partition);
  }

  /** Every held partition's steps under way, done: the fold holds only what is committed. */
  async settled(): Promise<void> {
    await this.holds.quiet();
  }

  async readStream(partition: string, stream: string): Promise<StoredEvent<BackendEvent>[]> {
    return (await this.store.readStream(partition, stream)).map(asStored);
  }

  async lastPositionOf(partition: string, stream: string): Promise<number> {
    return (await this.store.readStream(partition, stream)).at(-1)?.version ?? 0;
  }

  removeStreams(partition: string, streams: readonly string[], position: number): Promise<number> {
    return this.store.removeStreams(partition, streams, position);
  }

  async storedIntegrations(): Promise<string[]> {
    const ids: string[] = [];
    for (
      let page = await this.store.partitions(SERVICE_PARTITION, 1_000);
      page.length > 0;
      page = await this.store.partitions(page.at(-1)!, 1_000)
    )
      ids.push(...page);
    return ids;
  }

  compacted(): void {
    this.holds.snapshotsDue();
  }

  /** Settles every step under way, then snapshots what this node folded since each partition's last (a clean stop). */
  async close(): Promise<void> {
    this.looks.stop();
    await this.holds.close();
  }

  private async step(held: HeldPartition, batch: Queued[], waiters: Waiter[]): Promise<void> {
    if (held.stale) await this.holds.refold(held);
    let changes = batch;
    // A read waits for a look without the lock; the decisions queued with it are answered on the same look if
    // they change nothing. Decisions alone go straight to the lock (one round trip fewer), but in a partition
    // that has no events here, so that one that decides nothing (a request naming no integration) makes none.
    if (waiters.length > 0 || batch.length === 0 || held.folded === 0) {
      await this.foldFrom(held, true);
      for (const waiter of waiters) waiter.resolve();
      changes = decidedAlready(batch);
    }
    if (changes.length === 0) return;
    const fence = this.options.ownership.fence(held.partition);
    // The owner appends all in one transaction, under its fence; refused it (another node owns the
    // integration now), the others go again without it, and the owner's are refused.
    if (fence !== undefined && (await this.append(held, changes, fence))) return;
    const others = changes.filter(({ owner }) => !owner);
    for (const { owner, reject } of changes) if (owner) reject(new NotOwnerError(held.partition));
    if (others.length === 0) return;
    if (held.stale) await this.holds.refold(held);
    await this.append(held, others, undefined);
  }

  /** Folds (and, `dispatch`, dispatches) every committed event of the partition after where its fold stands, page by page. */
  private async foldFrom(held: HeldPartition, dispatch: boolean): Promise<void> {
    for (
      let page = await this.store.read(held.partition, held.folded);
      page.length > 0;
      page = await this.store.read(held.partition, held.folded)
    )
      this.take(held, page, dispatch);
  }

  private take(held: HeldPartition, committed: readonly PartitionEvent<BackendEvent>[], dispatch: boolean): void {
    if (committed.length === 0) return;
    const events = committed.map(({ event }) => event);
    const parts = this.parts!;
    // Dispatched, a job event is marked committed by the dispatch itself (the job store's handler).
    for (const event of events) (dispatch ? parts.fold : parts.foldCommitted)(event);
    held.folded = committed.at(-1)!.version;
    held.sinceSnapshot += committed.length;
    if (!dispatch) return;
    held.dispatched = held.folded;
    parts.dispatch(events, false);
  }

  /**
   * Decides the batch with the partition locked, after what others committed to it; one transaction for
   * all, fenced when `fence`. False when the fence was refused: the batch is left to the caller, undecided.
   */
  private async append(held: HeldPartition, batch: readonly Queued[], fence: Fence | undefined): Promise<boolean> {
    const outcomes: Array<{ ok: true; outcome: unknown } | { ok: false; error: unknown }> = [];
    const parts = this.parts!;
    let born: string[] = [];
    let result;
    try {
      const append = this.store.append(
        held.partition,
        held.folded,
        (committed) => {
          this.take(held, committed, true);
          outcomes.length = 0;
          const events: BackendEvent[] = [];
          for (const { decide } of batch) {
            try {
              const decision = decide();
              for (const event of decision.events) parts.fold(event);
              events.push(...decision.events);
              outcomes.push({ ok: true, outcome: decision.outcome });
            } catch (error) {
              outcomes.push({ ok: false, error });
            }
          }
          // From here the fold is ahead of the log until the commit is known.
          if (events.length > 0) held.stale = true;
          const { own, others } = byPartition(held.partition, events);
          born = [...others.keys()];
          const live = held.partition === SERVICE_PARTITION ? undefined : parts.live(held.partition);
          return {
            events: own,
            born: [...others].map(([partition, bornEvents]) => ({ partition, events: bornEvents })),
            ...(live === undefined ? {} : { live }),
          };
        },
        { node: this.options.node, ...(fence === undefined ? {} : { fence }), ...this.claim(held.partition) },
      );
      this.options.appending?.(append);
      result = await append;
    } catch (error) {
      // Partitions this batch would have made are in the fold though not in the store: they go with it.
      for (const partition of born) parts.evict(partition);
      if (fence !== undefined && isFenced(error)) {
        this.options.ownership.lost(held.partition);
        // Refused before anything was written: the fold holds the decisions' events, and is folded again.
        return false;
      }
      for (const { reject } of batch) reject(error);
      return true;
    }
    held.stale = false;
    // Before the dispatch: the events of an integration this append made its own arm their timers here.
    if (result.claimed !== undefined) this.options.ownership.claimed(result.claimed);
    const appended = [...result.appended];
    if (appended.length > 0) held.folded = held.dispatched = appended.at(-1)!.version;
    for (const made of result.born) this.holds.born(made.partition, made.appended.at(-1)?.version ?? 0);
    const events = [...appended, ...result.born.flatMap((made) => made.appended)].map(({ event }) => event);
    if (events.length > 0) parts.dispatch(events, true);
    this.holds.committed(held, appended.length);
    batch.forEach(({ resolve, reject }, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) resolve(outcome.outcome);
      else reject(outcome.error);
    });
    return true;
  }

  /** An append to an integration this node does not own claims it if no node does (ownership.ts). */
  private claim(partition: string): { claim?: number } {
    const leaseMs = this.options.ownership.claimLeaseMs;
    return partition === SERVICE_PARTITION || leaseMs === undefined || this.options.ownership.owns(partition) ? {} : { claim: leaseMs };
  }

  /** The look every node takes each second: the held partitions that others appended to are folded now. */
  private async look(): Promise<void> {
    const held = this.holds.all();
    if (held.length === 0) return;
    const versions = await this.store.versions(held.map(({ partition }) => partition));
    await Promise.all(held.filter((h) => (versions.get(h.partition) ?? 0) > h.folded).map((h) => this.caughtUp(h.partition)));
  }
}

function asStored({ version, event }: PartitionEvent<BackendEvent>): StoredEvent<BackendEvent> {
  return { position: version, event };
}
