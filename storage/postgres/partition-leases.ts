/**
 * The leases on the partitions of the partitioned log (storage/partitions.ts) in PostgreSQL: which node
 * owns a partition, with which fencing token, until when. Every time is the database's clock, never a
 * node's (the nodes' clocks differ; the lease's deadline must mean one instant to all of them), and each
 * operation is one statement.
 */
import type { Fence } from '../partitions.js';
import type { Query } from './connection.js';

/** Now in ms by the database's clock (the wall clock, not the transaction's start: a lock may have been waited on). */
export const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

interface FenceRow {
  partition: string;
  fence: string;
}

export class PgPartitionLeases {
  constructor(private readonly query: Query) {}

  /** See PartitionedStore.claim: an owner that changes takes the next token; one that stays keeps its own. */
  async claim(partition: string, node: string, leaseMs: number, takeover: boolean): Promise<Fence | undefined> {
    const { rows } = await this.query<FenceRow>(
      `INSERT INTO partitions AS p (partition, owner, fence, lease_until) VALUES ($1, $2, 1, ${NOW_MS} + $3)
       ON CONFLICT (partition) DO UPDATE SET
         owner = $2,
         fence = CASE WHEN p.owner IS NOT DISTINCT FROM $2 THEN p.fence ELSE p.fence + 1 END,
         lease_until = ${NOW_MS} + $3
       WHERE p.owner IS NULL OR p.owner = $2 OR p.lease_until <= ${NOW_MS} OR $4
       RETURNING partition, fence`,
      [partition, node, leaseFor(leaseMs), takeover],
    );
    return rows.map(fenceOf(node))[0];
  }

  /** See PartitionedStore.renew: a lease still `node`'s with the same token is extended, even one that expired unclaimed. */
  async renew(node: string, fences: readonly Fence[], leaseMs: number): Promise<Fence[]> {
    const held = fences.filter((fence) => fence.node === node);
    if (held.length === 0) return [];
    const { rows } = await this.query<FenceRow>(
      `UPDATE partitions AS p SET lease_until = (SELECT ${NOW_MS}) + $4
       FROM unnest($2::text[], $3::bigint[]) AS held (partition, token)
       WHERE p.partition = held.partition AND p.owner = $1 AND p.fence = held.token
       RETURNING p.partition, p.fence`,
      [node, held.map((fence) => fence.partition), held.map((fence) => fence.token), leaseFor(leaseMs)],
    );
    return rows.map(fenceOf(node));
  }

  /** See PartitionedStore.release: the token stays, so that whoever claims the partition next takes a greater one. */
  async release(fence: Fence): Promise<void> {
    await this.query('UPDATE partitions SET owner = NULL, lease_until = 0 WHERE partition = $1 AND owner = $2 AND fence = $3', [
      fence.partition,
      fence.node,
      fence.token,
    ]);
  }

  /** See PartitionedStore.claimOrphans: partitions another node is claiming at this instant are passed over, not waited on. */
  async claimOrphans(node: string, leaseMs: number, limit: number): Promise<Fence[]> {
    const { rows } = await this.query<FenceRow>(
      `WITH now AS (SELECT ${NOW_MS} AS ms),
       orphans AS (
         SELECT partition FROM partitions WHERE live AND lease_until <= (SELECT ms FROM now)
         ORDER BY lease_until LIMIT $3 FOR UPDATE SKIP LOCKED)
       UPDATE partitions AS p SET owner = $1, fence = p.fence + 1, lease_until = (SELECT ms FROM now) + $2
       FROM orphans WHERE p.partition = orphans.partition
       RETURNING p.partition, p.fence`,
      [node, leaseFor(leaseMs), Math.max(0, Math.trunc(limit))],
    );
    return rows.map(fenceOf(node));
  }
}

function leaseFor(leaseMs: number): number {
  if (!Number.isSafeInteger(leaseMs) || leaseMs <= 0) throw new RangeError(`a lease lasts a positive whole number of ms: ${leaseMs}`);
  return leaseMs;
}

function fenceOf(node: string): (row: FenceRow) => Fence {
  return (row) => ({ partition: row.partition, node, token: Number(row.fence) });
}
