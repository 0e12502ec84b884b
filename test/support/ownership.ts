/**
 * What the process tests of ownership (test/process/ownership.test.ts) read and do on a cluster of
 * backend processes (process-cluster.ts): jobs that only a deadline ends, each integration's lease and
 * its events as committed (by which node, under which fence), and a pause of a node timed against its
 * lease's renewal.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { expect } from 'vitest';
import { request } from './http.js';
import { eventsByJob, PAYLOAD, SETTLED, type ClusterNode, type Integration, type ProcessCluster } from './process-cluster.js';
import { eventually } from './wait.js';

/** Creates a job at `base` (a node, or the balancer) that ends by its deadline unless a plugin answers it. */
export async function createJob(base: string, integration: Integration, deadline_ms: number): Promise<string> {
  const job_id = randomUUID();
  const answer = await request(`${base}/api/v1/assistant/integrations/${integration.integration_id}/jobs`, {
    token: integration.client_token,
    body: { job_id, purpose: 'live_analysis', payload: PAYLOAD, deadline_ms },
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return job_id;
}

export interface Lease {
  readonly owner: string | null;
  readonly fence: number;
  readonly version: number;
}

/** The integration's lease (its owner, a node's epoch, and its fence) and its partition's version. */
export async function leaseOf(c: ProcessCluster, integrationId: string): Promise<Lease> {
  const [row] = await c.sql<{ owner: string | null; fence: string; version: string }>(
    'SELECT owner, fence, version FROM partitions WHERE partition = $1',
    [integrationId],
  );
  return { owner: row?.owner ?? null, fence: Number(row?.fence ?? 0), version: Number(row?.version ?? 0) };
}

export interface Row {
  readonly version: number;
  readonly type: string;
  readonly node: string;
  readonly fence: number | null;
}

/** The integration's events in the log, in its order: who committed each, under which fence. */
export async function rowsOf(c: ProcessCluster, integrationId: string): Promise<Row[]> {
  const rows = await c.sql<{ version: string; type: string; node: string; fence: string | null }>(
    'SELECT version, type, node, fence FROM partition_events WHERE partition = $1 ORDER BY version',
    [integrationId],
  );
  return rows.map((row) => ({ ...row, version: Number(row.version), fence: row.fence === null ? null : Number(row.fence) }));
}

/** Every job ended exactly once, by its deadline (no plugin answers), and nothing came after its end. */
export async function expectEachExpiredOnce(c: ProcessCluster, jobIds: readonly string[]): Promise<void> {
  const jobs = await eventsByJob(c);
  expect([...jobs.keys()].sort()).toEqual([...jobIds].sort());
  for (const [job_id, types] of jobs) {
    expect(types.filter((type) => type === 'job.created').length, job_id).toBe(1);
    expect(
      types.filter((type) => SETTLED.has(type)),
      job_id,
    ).toEqual(['job.expired']);
    expect(types.at(-1), job_id).toBe('job.expired');
  }
}

export async function untilAllEnded(c: ProcessCluster, jobIds: readonly string[], timeoutMs: number): Promise<void> {
  await eventually(
    'every job ended',
    async () => [...(await eventsByJob(c)).entries()].filter(([, types]) => types.some((type) => SETTLED.has(type))).length,
    (ended) => ended === jobIds.length,
    { timeoutMs, everyMs: 200 },
  );
}

/** What only an integration's owner decides (a stream's delivery, a lapsed lease's release, a stream's takeover): committed under its fence. */
const OWNER_ONLY = new Set(['job.delivered', 'job.released', 'integration.stream_held']);

/**
 * Fences grow in the partition's order, and each is one node's: two nodes never both committed as its
 * owner. Every owner-only event carries one.
 */
export function expectFencedOnce(rows: readonly Row[]): void {
  for (const row of rows.filter(({ type }) => OWNER_ONLY.has(type)))
    expect(row, 'an owner-only event').toMatchObject({ fence: expect.any(Number) });
  const fenced = rows.filter((row) => row.fence !== null);
  fenced.forEach((row, i) => expect(row.fence, `version ${row.version}`).toBeGreaterThanOrEqual(fenced[i - 1]?.fence ?? 0));
  const nodesOf = new Map<number, Set<string>>();
  for (const { fence, node } of fenced) nodesOf.set(fence!, (nodesOf.get(fence!) ?? new Set()).add(node));
  for (const [fence, nodes] of nodesOf) expect([...nodes], `fence ${fence}`).toHaveLength(1);
}

/**
 * SIGSTOPs the node while a renewal of its lease on the integration is under way: the store renews it,
 * and the node sleeps before it hears so. Woken, it believes its lease fresh until its next renewal (a
 * third of a lease later) and acts as the owner meanwhile, so that only the store's fence stops it. (The
 * renewal is held on the lease's row lock, taken here, until the node is stopped.)
 */
export async function pauseWhileRenewing(c: ProcessCluster, node: ClusterNode, integrationId: string): Promise<void> {
  const locker = new pg.Client({ connectionString: c.postgres, options: `-c search_path=${c.schema}` });
  await locker.connect();
  try {
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM partitions WHERE partition = $1 FOR UPDATE', [integrationId]);
    await eventually(
      "the node's renewal waiting on the lease's row",
      () =>
        c.sql(
          `SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE 'UPDATE partitions AS p SET lease_until%'`,
          [(locker as unknown as { processID: number }).processID],
        ),
      (waiting) => waiting.length > 0,
      { everyMs: 5, timeoutMs: 3_000 },
    );
    node.kill('SIGSTOP');
    await locker.query('COMMIT');
  } finally {
    await locker.end();
  }
}
