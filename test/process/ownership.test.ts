/**
 * Who owns an integration, among three backend nodes on PostgreSQL (engine/reasoning/ownership.ts), seen
 * from the shared log: a SIGKILLed owner's integrations are served by another node within 5 s, their
 * deadlines and delivery leases firing there, every job ending once; an owner paused past its lease
 * (SIGSTOP) and woken while it has timers due and a stream still open commits nothing as the owner once
 * another node took over (each fence committed by one node, fences growing in each partition's order);
 * a node started again folds no integration it is not asked for. On NATS and on Redis.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import { NATS_URL, REDIS_URL } from '../support/brokers.js';
import { killChildren } from '../support/child.js';
import { request } from '../support/http.js';
import { scrape } from '../support/metrics.js';
import { POSTGRES_URL } from '../support/postgres.js';
import { eventsByJob, OPERATOR, SETTLED, startCluster, type Integration, type ProcessCluster } from '../support/process-cluster.js';
import { silentPlugin } from '../support/silent-plugin.js';
import { eventually, waitFor } from '../support/wait.js';

const stops: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await killChildren();
  for (const stop of stops.splice(0).reverse()) await stop();
});

const BROKERS = [
  ['NATS', NATS_URL],
  ['Redis', REDIS_URL],
] as const;

/** Leases short enough that a delivery lease runs out within the test: heartbeats each second, a delivered job waits 2 s. */
const QUICK_LEASES = ['--heartbeat-interval', '1s', '--delivery-lease', '2s'];

const PAYLOAD = { session_id: 'call', transcript: [{ speaker: 'Ana', text: 'We decided to start in March.' }] };

/** Creates a job at `base` (a node, or the balancer) that ends by its deadline unless a plugin answers it. */
async function createJob(base: string, integration: Integration, deadline_ms: number): Promise<string> {
  const job_id = randomUUID();
  const answer = await request(`${base}/api/v1/assistant/integrations/${integration.integration_id}/jobs`, {
    token: integration.client_token,
    body: { job_id, purpose: 'live_analysis', payload: PAYLOAD, deadline_ms },
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return job_id;
}

interface Lease {
  readonly owner: string | null;
  readonly fence: number;
  readonly version: number;
}

async function leaseOf(c: ProcessCluster, integrationId: string): Promise<Lease> {
  const [row] = await c.sql<{ owner: string | null; fence: string; version: string }>(
    'SELECT owner, fence, version FROM partitions WHERE partition = $1',
    [integrationId],
  );
  return { owner: row?.owner ?? null, fence: Number(row?.fence ?? 0), version: Number(row?.version ?? 0) };
}

interface Row {
  readonly version: number;
  readonly type: string;
  readonly node: string;
  readonly fence: number | null;
}

/** The integration's events in the log, in its order: who committed each, under which fence. */
async function rowsOf(c: ProcessCluster, integrationId: string): Promise<Row[]> {
  const rows = await c.sql<{ version: string; type: string; node: string; fence: string | null }>(
    'SELECT version, type, node, fence FROM partition_events WHERE partition = $1 ORDER BY version',
    [integrationId],
  );
  return rows.map((row) => ({ ...row, version: Number(row.version), fence: row.fence === null ? null : Number(row.fence) }));
}

/** Every job ended exactly once, by its deadline (no plugin answers), and nothing came after its end. */
async function expectEachExpiredOnce(c: ProcessCluster, jobIds: readonly string[]): Promise<void> {
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

async function untilAllEnded(c: ProcessCluster, jobIds: readonly string[], timeoutMs: number): Promise<void> {
  await eventually(
    'every job ended',
    async () => [...(await eventsByJob(c)).entries()].filter(([, types]) => types.some((type) => SETTLED.has(type))).length,
    (ended) => ended === jobIds.length,
    { timeoutMs, everyMs: 200 },
  );
}

/** Fences grow in the partition's order, and each is one node's: two nodes never both committed as its owner. */
function expectFencedOnce(rows: readonly Row[]): void {
  const fenced = rows.filter((row) => row.fence !== null);
  fenced.forEach((row, i) => expect(row.fence, `version ${row.version}`).toBeGreaterThanOrEqual(fenced[i - 1]?.fence ?? 0));
  const nodesOf = new Map<number, Set<string>>();
  for (const { fence, node } of fenced) nodesOf.set(fence!, (nodesOf.get(fence!) ?? new Set()).add(node));
  for (const [fence, nodes] of nodesOf) expect([...nodes], `fence ${fence}`).toHaveLength(1);
}

it.each(BROKERS)(
  'a SIGKILLed owner (%s): its integrations are served by another node within 5 s, deadlines and leases fire there, every job ends once',
  async (_name, broker) => {
    const c = await startCluster(POSTGRES_URL, broker, stops, { flags: QUICK_LEASES });
    // An integration whose plugin takes jobs and never answers: the node holding its stream owns it.
    const streamed = await c.addIntegration();
    const plugin = silentPlugin(() => c.balancer.url, streamed);
    stops.push(async () => plugin.stop());
    await waitFor('the stream', plugin.open);
    const { owner } = await eventually('its owner', () => leaseOf(c, streamed.integration_id), (lease) => lease.owner !== null);
    const victim = c.nodes.findIndex((node) => node.epoch === owner);
    expect(victim).toBeGreaterThanOrEqual(0);
    // Two with no plugin, their jobs created at that node: the creator claims them, and only deadlines end their jobs.
    const plain = [await c.addIntegration(), await c.addIntegration()];
    const delivered = [];
    for (let i = 0; i < 3; i += 1) delivered.push(await createJob(c.balancer.url, streamed, 7_000));
    await waitFor('the jobs delivered', () => plugin.received().length >= 3);
    const deadlined = [];
    for (const integration of plain) for (let i = 0; i < 3; i += 1) deadlined.push(await createJob(c.nodes[victim]!.url, integration, 2_000));
    const owned = [streamed, ...plain].map(({ integration_id }) => integration_id);
    for (const id of owned) expect((await leaseOf(c, id)).owner).toBe(owner);
    const atKill = new Map(await Promise.all(owned.map(async (id) => [id, (await leaseOf(c, id)).version] as const)));

    c.nodes[victim]!.kill('SIGKILL');
    const killedAt = Date.now();
    // Each integration: when another node owns it, when it first commits as its owner, and when a timer of it first fires there.
    const taken = new Map<string, { owned?: number; committed?: number; fired?: number }>(owned.map((id) => [id, {}]));
    await eventually(
      'the integrations served elsewhere',
      async () => {
        for (const [id, times] of taken) {
          const now = Date.now() - killedAt;
          const lease = await leaseOf(c, id);
          if (times.owned === undefined && lease.owner !== null && lease.owner !== owner) times.owned = now;
          const after = (await rowsOf(c, id)).filter((row) => row.version > atKill.get(id)! && row.fence !== null && row.node !== owner);
          if (times.committed === undefined && after.length > 0) times.committed = now;
          if (times.fired === undefined && after.some(({ type }) => type === 'job.released' || type === 'job.expired')) times.fired = now;
        }
        return [...taken.values()];
      },
      (all) => all.every((times) => times.fired !== undefined),
      { timeoutMs: 8_000, everyMs: 25 },
    );
    console.log(`takeover after SIGKILL (${_name}), ms since the kill:`, JSON.stringify(Object.fromEntries(taken)));
    for (const times of taken.values()) {
      expect(times.owned).toBeLessThanOrEqual(5_000);
      expect(times.committed).toBeLessThanOrEqual(5_000);
    }

    await untilAllEnded(c, [...delivered, ...deadlined], 15_000);
    await expectEachExpiredOnce(c, [...delivered, ...deadlined]);
    for (const id of owned) {
      const rows = await rowsOf(c, id);
      expectFencedOnce(rows);
      // Every deadline and lease that came after the kill fired on another node, as its owner.
      for (const row of rows.filter(({ version, type }) => version > atKill.get(id)! && (type === 'job.expired' || type === 'job.released')))
        expect(row).toMatchObject({ fence: expect.any(Number), node: expect.not.stringMatching(owner!) });
    }
    // The jobs its plugin never answered were delivered again by the new owner, after their delivery leases ran out there.
    const redelivered = (await rowsOf(c, streamed.integration_id)).filter(
      ({ version, type }) => version > atKill.get(streamed.integration_id)! && type === 'job.delivered',
    );
    expect(redelivered.length).toBeGreaterThanOrEqual(delivered.length);
    for (const job_id of delivered) expect(plugin.received().filter((frame) => frame.job_id === job_id).length).toBeGreaterThanOrEqual(2);
  },
  60_000,
);
