/**
 * A log partitioned by key, as the backend relay keeps it on a store several nodes share: each integration
 * is a partition (its jobs, stream, rekeys, presence), and one small partition, `SERVICE_PARTITION`, holds
 * what is the whole service's (pairings before an integration exists, the operator's tickets, node starts).
 * Each partition is an ordered sequence of events numbered 1, 2, … (its version) and is appended to under
 * its own concurrency control, so that appends to two partitions never wait on each other.
 *
 * A partition may have an owner: the node that runs its timers and holds its stream. Ownership is a lease
 * with a fencing token that grows at every change of owner; an append made as the owner names its fence,
 * and commits only if the lease is still that node's, with that token, and not expired, so a node that
 * lost its lease (paused past it, cut off) can never commit as the owner.
 */

/** The service's own partition: pairings, pairing tickets, node starts. Never an integration's id (those are UUIDs). */
export const SERVICE_PARTITION = '';

/** An event as committed in its partition. */
export interface PartitionEvent<E> {
  /** 1 for a partition's first event, one more for each after it. */
  readonly version: number;
  readonly event: E;
}

/** A node's lease on a partition: its token grows at every change of owner, and an owner's append names it. */
export interface Fence {
  readonly partition: string;
  /** The owner: a node's epoch (one per process start). */
  readonly node: string;
  readonly token: number;
}

/** What one append decided, given the events committed after the caller's version. */
export interface AppendDecision<E> {
  /** Appended to the partition, after what was committed. */
  readonly events: readonly E[];
  /**
   * Partitions this append creates (pairing completion creates its integration's): each must not exist yet,
   * or the whole append fails with `PartitionExistsError` and nothing is appended.
   */
  readonly born?: ReadonlyArray<{ readonly partition: string; readonly events: readonly E[] }>;
  /** Whether the partition has timers to keep after this append (open jobs, an online plugin): one with an expired lease is an orphan another node claims. Unchanged when absent. */
  readonly live?: boolean;
}

export interface AppendResult<E> {
  /** What others committed after the caller's version, handed to the decision (the caller folds it). */
  readonly committed: readonly PartitionEvent<E>[];
  readonly appended: readonly PartitionEvent<E>[];
  readonly born: ReadonlyArray<{ readonly partition: string; readonly appended: readonly PartitionEvent<E>[] }>;
  /** The lease the append took with `claim`: the partition is the appending node's now. */
  readonly claimed?: Fence;
}

/** The store of a partitioned log (storage/postgres/partitioned-log.ts). */
export interface PartitionedStore<E> {
  /** Up to `limit` committed events of the partition after `after`, oldest first. */
  read(partition: string, after: number, limit?: number): Promise<PartitionEvent<E>[]>;
  /** The newest committed version of each partition named (0 for one that does not exist): one query, what a node's look reads. */
  versions(partitions: readonly string[]): Promise<Map<string, number>>;
  /**
   * One append, atomically: with the partition locked against other appends, `decide` is handed what was
   * committed after `after` and returns what to append. With `fence`, it commits only while that lease
   * holds (else `FencedError`, nothing appended). `node` is recorded beside each event (who committed it).
   * With `claim` (a lease's length), an append that leaves the partition live while no node holds a live
   * lease on it takes the lease for `node` in the same transaction (`claimed`).
   */
  append(
    partition: string,
    after: number,
    decide: (committed: readonly PartitionEvent<E>[]) => AppendDecision<E>,
    options: { readonly node: string; readonly fence?: Fence; readonly claim?: number },
  ): Promise<AppendResult<E>>;
  /** The partition's newest stored snapshot, if any. */
  snapshot(partition: string): Promise<{ readonly version: number; readonly data: string } | undefined>;
  /** Stores a snapshot of the partition's fold as of `version`, keeping the newest two. */
  writeSnapshot(partition: string, version: number, data: string, at: number): Promise<void>;
  /** The committed events of one stream of the partition, oldest first. */
  readStream(partition: string, stream: string): Promise<PartitionEvent<E>[]>;
  /** Retention: removes the events of `streams` in the partition stored before `version`. Returns how many went. */
  removeStreams(partition: string, streams: readonly string[], version: number): Promise<number>;

  /**
   * Takes the partition's lease for `node` for `leaseMs` (the database's clock): when it has no owner, its
   * lease expired, it is already `node`'s, or `takeover` (a stream opened here takes over from another
   * node). A new owner gets a greater token. Undefined: another node holds a live lease.
   */
  claim(partition: string, node: string, leaseMs: number, takeover: boolean): Promise<Fence | undefined>;
  /** Renews the leases `node` holds for `leaseMs`; resolves with those it still holds (a lease taken over is gone). */
  renew(node: string, fences: readonly Fence[], leaseMs: number): Promise<Fence[]>;
  /** Gives the lease up (a partition with nothing to time, evicted): another node may claim it at once. */
  release(fence: Fence): Promise<void>;
  /** Claims for `node` up to `limit` live partitions whose owner's lease expired (its owner died or was cut off). */
  claimOrphans(node: string, leaseMs: number, limit: number): Promise<Fence[]>;
  /** The ids of the stored partitions after `after`, in order, up to `limit` (what the operator pages through). */
  partitions(after: string, limit: number): Promise<string[]>;
}
