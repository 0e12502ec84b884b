/**
 * Which node runs an integration's timers (job deadlines, delivery leases, the offline deadline), holds its
 * plugin's stream and forgets in its partition: its owner. On a log of one process that node owns every
 * integration (`SoleOwnership`). On a store several nodes share (`LeasedOwnership`), ownership is a lease
 * in the store with a fencing token: a node takes an integration over when its plugin's stream opens there,
 * claims one that needs an owner and has none (in the append of a job created here; or once its owner's
 * lease ran out, the owner dead or cut off), renews what it holds, and gives up what needs no owner any more.
 * An owner's appends name its fence, so a node that lost its lease, whatever it believes, commits nothing
 * as the owner; it learns so from the store, and lets its timers and stream for the integration go.
 */
import type { Fence, PartitionedStore } from '../../storage/partitions.js';
import type { Clock, TimerHandle } from '../core/clock.js';

export interface OwnershipHandlers {
  readonly gained: (integrationId: string) => void;
  readonly lost: (integrationId: string) => void;
  readonly needed: (integrationId: string) => boolean;
}

export interface Ownership {
  /** Whether this node owns the integration now. */
  owns(integrationId: string): boolean;
  /** This node's fence for the integration, while it owns it. */
  fence(integrationId: string): Fence | undefined;
  /** The integration's plugin opened its stream here: this node takes it over (false when the store cannot be reached). */
  takeOver(integrationId: string): Promise<boolean>;
  /** An append of this node that leaves an integration with timers to keep takes its lease for this long if no node holds a live one (undefined: no leases). */
  readonly claimLeaseMs: number | undefined;
  /** Such an append took the lease: this node owns the integration from now. */
  claimed(fence: Fence): void;
  /** The store refused this node's fence for the integration: another node owns it now. */
  lost(integrationId: string): void;
  /**
   * Calls `gained` for each integration this node comes to own, and `lost` for each it no longer does;
   * one it owns is given up once `needed` says it has no timers and no stream here.
   */
  listen(handlers: OwnershipHandlers): void;
  stop(): Promise<void>;
}

/** One process's log: this node owns every integration, and no append needs a fence. */
export class SoleOwnership implements Ownership {
  owns(): boolean {
    return true;
  }
  fence(): Fence | undefined {
    return undefined;
  }
  async takeOver(): Promise<boolean> {
    return true;
  }
  readonly claimLeaseMs = undefined;
  claimed(): void {}
  lost(): void {}
  listen(): void {}
  async stop(): Promise<void> {}
}

export interface LeaseOptions {
  /** How long a lease lasts unless renewed: a dead owner's integrations are claimed by another node within about this. Default 3 s. */
  readonly leaseMs?: number;
  /** Orphans claimed at once by one node's look: the rest are left to the next look, or to other nodes. Default 100. */
  readonly claimAtOnce?: number;
}

export const DEFAULT_OWNERSHIP_LEASE_MS = 3_000;

export class LeasedOwnership implements Ownership {
  private readonly owned = new Map<string, Fence>();
  private readonly leaseMs: number;
  private readonly claimAtOnce: number;
  private timer: TimerHandle | undefined;
  private ticking: Promise<void> = Promise.resolve();
  /** When this node's leases were last renewed: past a lease without a renewal, it owns nothing. */
  private renewedAt: number;
  private stopped = false;
  private handlers: OwnershipHandlers = { gained: () => {}, lost: () => {}, needed: () => true };

  constructor(
    private readonly store: PartitionedStore<unknown>,
    private readonly node: string,
    private readonly clock: Clock,
    private readonly report: (error: unknown, context: { readonly what: string }) => void,
    options: LeaseOptions = {},
  ) {
    this.leaseMs = options.leaseMs ?? DEFAULT_OWNERSHIP_LEASE_MS;
    this.claimAtOnce = options.claimAtOnce ?? 100;
    this.renewedAt = clock.now();
  }

  listen(handlers: OwnershipHandlers): void {
    this.handlers = handlers;
    this.arm();
  }

  owns(integrationId: string): boolean {
    return this.owned.has(integrationId);
  }

  fence(integrationId: string): Fence | undefined {
    return this.owned.get(integrationId);
  }

  async takeOver(integrationId: string): Promise<boolean> {
    return this.take(integrationId, true);
  }

  get claimLeaseMs(): number | undefined {
    return this.stopped ? undefined : this.leaseMs;
  }

  claimed(fence: Fence): void {
    const had = this.owned.get(fence.partition);
    this.owned.set(fence.partition, fence);
    if (had === undefined) this.handlers.gained(fence.partition);
  }

  lost(integrationId: string): void {
    if (!this.owned.delete(integrationId)) return;
    this.handlers.lost(integrationId);
  }

  /** Gives up every lease (a clean stop: other nodes claim them at once), and renews nothing more. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    await this.ticking;
    const fences = [...this.owned.values()];
    this.owned.clear();
    await Promise.all(fences.map((fence) => this.store.release(fence).catch(() => undefined)));
  }

  private async take(integrationId: string, takeover: boolean): Promise<boolean> {
    const fence = await this.store.claim(integrationId, this.node, this.leaseMs, takeover);
    if (fence === undefined || this.stopped) return false;
    const had = this.owned.get(integrationId);
    this.owned.set(integrationId, fence);
    if (had === undefined) this.handlers.gained(integrationId);
    return true;
  }

  /** A third of a lease between looks: a lease is renewed twice before it could run out. */
  private arm(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimeout(() => {
      this.ticking = this.tick().finally(() => this.arm());
    }, this.leaseMs / 3);
  }

  /** Renews what is still needed, gives up the rest, then claims orphans. */
  private async tick(): Promise<void> {
    const now = this.clock.now();
    try {
      const unneeded = [...this.owned.values()].filter(({ partition }) => !this.handlers.needed(partition));
      for (const fence of unneeded) {
        this.lost(fence.partition);
        await this.store.release(fence);
      }
      const held = [...this.owned.values()];
      const renewed = new Set((await this.store.renew(this.node, held, this.leaseMs)).map(({ partition }) => partition));
      this.renewedAt = now;
      for (const { partition } of held) if (!renewed.has(partition)) this.lost(partition);
      for (const fence of await this.store.claimOrphans(this.node, this.leaseMs, this.claimAtOnce)) {
        this.owned.set(fence.partition, fence);
        this.handlers.gained(fence.partition);
      }
    } catch (error) {
      this.report(error, { what: 'renewing the leases of the integrations this node owns' });
      // Cut off from the store for a whole lease: another node may own them now, so this one owns none.
      if (this.clock.now() - this.renewedAt >= this.leaseMs) for (const partition of [...this.owned.keys()]) this.lost(partition);
    }
  }
}
