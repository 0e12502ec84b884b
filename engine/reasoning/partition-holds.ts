/**
 * The partitions a node holds, within a bound: one is loaded when something asks for it (its newest
 * snapshot that decodes, then the events after it), kept while it is in use (a stream, a follower, a lease
 * here, a step under way) or was asked for lately, and let go when it is idle, or when more are held than
 * the bound allows (the least lately used first), with a snapshot of it when enough came since its last.
 * So a node's memory follows the integrations it serves now, not those the store holds.
 */
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import { SERVICE_PARTITION, type PartitionEvent, type PartitionedStore } from '../../storage/partitions.js';
import type { Clock, TimerHandle } from '../core/clock.js';
import { inSlices } from '../core/snapshots.js';
import type { FoldParts } from './backend-log.js';
import type { BackendState } from './backend-state.js';
import { HeldPartition } from './partition-steps.js';

export interface HoldOptions {
  /** Integrations' partitions held at most, beyond those in use. Default 10,000. */
  readonly maxHeld?: number;
  /** A partition nothing used for this long is let go. Default 60 s. */
  readonly idleMs?: number;
  /** Events of one partition between two of its snapshots. Default 1,000. */
  readonly snapshotEveryEvents?: number;
}

const DEFAULT_MAX_HELD = 10_000;
const DEFAULT_IDLE_MS = 60_000;
const DEFAULT_SNAPSHOT_EVERY = 1_000;
/** A partition let go with fewer events than this since its snapshot is loaded quickly enough without a new one. */
const SNAPSHOT_ON_RELEASE = 100;

type Take = (held: HeldPartition, page: readonly PartitionEvent<BackendEvent>[], dispatch: boolean) => void;

export class PartitionHolds {
  private readonly held = new Map<string, HeldPartition>();
  private readonly loading = new Map<string, Promise<HeldPartition>>();
  private parts: FoldParts<BackendState> | undefined;
  private sweeper: TimerHandle | undefined;
  private writing: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly maxHeld: number;
  private readonly idleMs: number;
  private readonly snapshotEvery: number;

  constructor(
    private readonly store: PartitionedStore<BackendEvent>,
    private readonly options: HoldOptions & {
      readonly clock: Clock;
      readonly report: (error: unknown, context: { readonly what: string }) => void;
    },
    private readonly take: Take,
  ) {
    this.maxHeld = options.maxHeld ?? DEFAULT_MAX_HELD;
    this.idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
    this.snapshotEvery = options.snapshotEveryEvents ?? DEFAULT_SNAPSHOT_EVERY;
  }

  start(parts: FoldParts<BackendState>): void {
    this.parts = parts;
    this.armSweep();
  }

  get(partition: string): HeldPartition | undefined {
    return this.held.get(partition);
  }

  all(): HeldPartition[] {
    return [...this.held.values()];
  }

  integrations(): string[] {
    return [...this.held.keys()].filter((partition) => partition !== SERVICE_PARTITION);
  }

  /** The partition, held: loaded first if it is not. */
  hold(partition: string): Promise<HeldPartition> {
    const held = this.held.get(partition);
    if (held !== undefined) {
      held.usedAt = this.options.clock.now();
      return Promise.resolve(held);
    }
    let loading = this.loading.get(partition);
    if (loading === undefined) {
      loading = this.load(partition).finally(() => this.loading.delete(partition));
      this.loading.set(partition, loading);
    }
    return loading;
  }

  /** A partition this node's append created, held from its first version (its events are folded already). */
  born(partition: string, version: number): void {
    const held = new HeldPartition(partition, this.options.clock.now());
    held.folded = held.dispatched = held.sinceSnapshot = version;
    this.held.set(partition, held);
  }

  /**
   * `count` events of this node's own appended to the partition: a snapshot once enough came since its
   * last, and at least four times as many as the jobs it holds, so that what a snapshot costs (about its
   * jobs) stays a small constant per event however many jobs an integration keeps.
   */
  committed(held: HeldPartition, count: number): void {
    held.sinceSnapshot += count;
    if (held.sinceSnapshot >= Math.max(this.snapshotEvery, 4 * this.parts!.size(held.partition))) this.snapshot(held);
  }

  /** Retention made folds smaller: each held partition snapshots at its next commit. */
  snapshotsDue(): void {
    for (const held of this.held.values()) held.sinceSnapshot = Math.max(held.sinceSnapshot, this.snapshotEvery - 1);
  }

  /** The fold went ahead of the store (an append whose commit failed): the partition again from its snapshot, dispatching only what is new. */
  async refold(held: HeldPartition): Promise<void> {
    // Not from a snapshot past what this node dispatched: what lies between would never be dispatched.
    held.folded = await this.restore(held.partition, held.dispatched);
    held.sinceSnapshot = 0;
    for (
      let page = await this.store.read(held.partition, held.folded);
      page.length > 0;
      page = await this.store.read(held.partition, held.folded)
    ) {
      const known = page.filter(({ version }) => version <= held.dispatched);
      this.take(held, known, false);
      this.take(held, page.slice(known.length), true);
    }
    held.stale = false;
  }

  /** Every held partition's steps done. */
  async quiet(): Promise<void> {
    while (true) {
      const working = this.all().flatMap(({ working }) => (working === undefined ? [] : [working]));
      if (working.length === 0) return;
      await Promise.all(working);
    }
  }

  /** No sweep from now; every step settled; a snapshot of each partition folded on since its last; written. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.sweeper !== undefined) this.options.clock.clearTimeout(this.sweeper);
    await this.quiet();
    for (const held of this.held.values()) if (held.sinceSnapshot > 0 && !held.stale) this.snapshot(held);
    await this.writing;
  }

  private async load(partition: string): Promise<HeldPartition> {
    const held = new HeldPartition(partition, this.options.clock.now());
    held.folded = await this.restore(partition, Infinity);
    for (let page = await this.store.read(partition, held.folded); page.length > 0; page = await this.store.read(partition, held.folded))
      this.take(held, page, false);
    held.dispatched = held.folded;
    this.held.set(partition, held);
    if (this.held.size > this.maxHeld + 1) this.sweep();
    return held;
  }

  /** The partition's fold replaced by its newest snapshot at or before `upTo` that decodes (one that does not is reported), or by nothing; answers its version. */
  private async restore(partition: string, upTo: number): Promise<number> {
    const parts = this.parts!;
    const snapshot = await this.store.snapshot(partition);
    if (snapshot !== undefined && snapshot.version <= upTo) {
      try {
        parts.load(partition, parts.codec.decode(snapshot.data));
        return snapshot.version;
      } catch (error) {
        this.options.report(error, {
          what: `using the snapshot of partition ${partition || 'of the service'} at version ${snapshot.version}`,
        });
      }
    }
    parts.load(partition, undefined);
    return 0;
  }

  /** A snapshot of the partition now, when its fold holds exactly what is committed; encoded and written off the step. */
  private snapshot(held: HeldPartition): void {
    held.sinceSnapshot = 0;
    if (held.folded === 0) return;
    const parts = this.parts!;
    const state = parts.capture(held.partition);
    const { partition, folded } = held;
    const at = this.options.clock.now();
    this.writing = this.writing.then(async () => {
      try {
        await this.store.writeSnapshot(partition, folded, await inSlices(parts.codec.encode(state)), at);
      } catch (error) {
        this.options.report(error, { what: `writing a snapshot of partition ${partition || 'of the service'}` });
      }
    });
  }

  private armSweep(): void {
    if (this.closed) return;
    this.sweeper = this.options.clock.setTimeout(
      () => {
        this.sweep();
        this.armSweep();
      },
      Math.min(this.idleMs, 10_000),
    );
  }

  /** Lets go of the partitions idle past `idleMs` (one that names no integration at once), then of the least lately used while more are held than the bound. */
  private sweep(): void {
    const parts = this.parts!;
    const now = this.options.clock.now();
    const idle = this.all()
      .filter((held) => held.partition !== SERVICE_PARTITION && held.quiet && !held.stale && !parts.inUse(held.partition))
      .sort((a, b) => a.usedAt - b.usedAt);
    let over = this.held.size - 1 - this.maxHeld;
    for (const held of idle) {
      // One with no events names no integration (a request for an unknown id): nothing to keep it for.
      if (now - held.usedAt < this.idleMs && over <= 0 && held.folded > 0) continue;
      if (held.sinceSnapshot >= SNAPSHOT_ON_RELEASE) this.snapshot(held);
      parts.evict(held.partition);
      this.held.delete(held.partition);
      over -= 1;
    }
  }
}
