/**
 * Three backend nodes as one service, under what operators fear: a node SIGKILLed while it holds the
 * plugin's stream and its jobs' leases; PostgreSQL and the broker restarted while jobs come in. Each
 * time, every job a client created ends exactly once (completed: the plugin answers them all), none is
 * lost, and the service resumes by itself. The nodes are the built CLI (`backend --store --pubsub`)
 * behind a balancer that sends each request to the next node; the plugin is the real one.
 */
import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { builtinReasoner, startPlugin, type Plugin } from '../../index.js';
import type { Reasoner } from '../../adapters/reasoners/reasoner.js';
import type { BaseLogger } from 'pino';
import { capturingLogger } from '../plugin/fixture.js';
import { startBalancer, type Balancer } from '../support/balancer.js';
import { NATS_URL, removeNamespace } from '../support/brokers.js';
import { killChildren, started } from '../support/child.js';
import { tempDir } from '../support/host.js';
import { request } from '../support/http.js';
import { POSTGRES_URL, testSchema } from '../support/postgres.js';
import { ownNats, ownPostgres, ownRedis, type OwnService } from '../support/services.js';
import { eventually, waitFor } from '../support/wait.js';

const stops: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await killChildren();
  for (const stop of stops.splice(0).reverse()) await stop();
});

const OPERATOR = 'operator-token-of-the-cluster-test';

interface Cluster {
  readonly balancer: Balancer;
  readonly nodes: Array<{ readonly url: string; kill(signal?: NodeJS.Signals): void; readonly exited: Promise<{ code: number | null }> }>;
  readonly integration: { integration_id: string; relay_token: string; client_token: string };
}

/** Three `backend` processes on one schema and namespace, behind a balancer, with one integration. */
async function cluster(postgres: string, broker: string): Promise<Cluster & { readonly schema: string }> {
  const dir = tempDir();
  stops.push(async () => rmSync(dir, { recursive: true, force: true }));
  const tokenFile = join(dir, 'operator-token');
  writeFileSync(tokenFile, OPERATOR, { mode: 0o600 });
  const schema = testSchema();
  const namespace = `test_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  stops.push(() => removeNamespace(broker, namespace).catch(() => {}));
  const args = [
    'backend',
    '--store',
    postgres,
    '--schema',
    schema,
    '--pubsub',
    broker,
    '--namespace',
    namespace,
    '--port',
    '0',
    '--token-file',
    tokenFile,
    '--log-level',
    'warn',
  ];
  const nodes: Cluster['nodes'] = [];
  for (let i = 0; i < 3; i += 1) {
    const node = await started(args);
    nodes.push({ url: String(node.line.listening), kill: (signal = 'SIGKILL') => node.child.kill(signal), exited: node.exited });
  }
  const balancer = await startBalancer(() => nodes.map((node) => node.url));
  stops.push(() => balancer.close());
  const created = await request(`${balancer.url}/api/v1/admin/integrations`, { token: OPERATOR, body: {} });
  expect(created.status).toBe(201);
  return { balancer, nodes, integration: created.body as Cluster['integration'], schema };
}

/** The builtin reasoner, a little slow: jobs are running (with leases) when the trouble comes. */
function slowReasoner(ms: number): Reasoner {
  const builtin = builtinReasoner({ providerKind: 'assistant-relay' });
  return { name: 'slow-builtin', reason: async (job) => (await new Promise((resolve) => setTimeout(resolve, ms)), builtin.reason(job)) };
}

async function plugin(c: Cluster, logger?: BaseLogger): Promise<Plugin> {
  const dir = tempDir();
  stops.push(async () => rmSync(dir, { recursive: true, force: true }));
  const started = await startPlugin({
    ...(logger === undefined ? {} : { logger }),
    backendUrl: c.balancer.url,
    integrationId: c.integration.integration_id,
    relayToken: c.integration.relay_token,
    reasoner: slowReasoner(150),
    db: join(dir, 'plugin.db'),
    providerKind: 'assistant-relay',
  });
  stops.push(() => started.stop());
  await waitFor('the plugin stream', () => started.status().stream === 'open');
  return started;
}

const PAYLOAD = { session_id: 'call', transcript: [{ speaker: 'Ana', text: 'We decided to start in March.' }] };

/** What the service refused while it could not take a job: status and code. */
const refusals: string[] = [];

/** Creates a job as a client would: the same job_id again until the service takes it (a retry is a duplicate). */
async function createJob(c: Cluster, job_id: string): Promise<void> {
  for (const since = Date.now(); ; await new Promise((resolve) => setTimeout(resolve, 100))) {
    const answer = await request(`${c.balancer.url}/api/v1/assistant/integrations/${c.integration.integration_id}/jobs`, {
      token: c.integration.client_token,
      body: { job_id, purpose: 'live_analysis', payload: PAYLOAD, deadline_ms: 120_000 },
    }).catch(() => undefined);
    if (answer !== undefined && (answer.status === 201 || answer.status === 200)) return;
    refusals.push(answer === undefined ? 'no answer' : `${answer.status} ${(answer.body as { error?: { code?: string } }).error?.code}`);
    if (answer !== undefined && answer.status < 500)
      throw new Error(`job ${job_id} refused: ${answer.status} ${JSON.stringify(answer.body)}`);
    if (Date.now() - since > 30_000) throw new Error(`job ${job_id} still not taken: ${answer?.status}`);
  }
}

async function stateOf(c: Cluster, job_id: string): Promise<string | undefined> {
  const answer = await request(`${c.balancer.url}/api/v1/assistant/integrations/${c.integration.integration_id}/jobs/${job_id}`, {
    token: c.integration.client_token,
  }).catch(() => undefined);
  return answer?.status === 200 ? (answer.body as { state: string }).state : undefined;
}

/** Each job's events in the shared log, by type. */
async function eventsByJob(postgres: string, schema: string): Promise<Map<string, string[]>> {
  const client = new pg.Client({ connectionString: postgres });
  await client.connect();
  try {
    const { rows } = await client.query<{ data: string }>(
      `SELECT data FROM ${schema}.partition_events WHERE stream LIKE 'job:%' ORDER BY partition, version`,
    );
    const jobs = new Map<string, string[]>();
    for (const { data } of rows) {
      const event = JSON.parse(data) as { job_id: string; type: string };
      jobs.set(event.job_id, [...(jobs.get(event.job_id) ?? []), event.type]);
    }
    return jobs;
  } finally {
    await client.end();
  }
}

const SETTLED = new Set(['job.completed', 'job.failed', 'job.expired', 'job.cancelled']);

/** Every job was created once and ended once, completed; and nothing else is in the log. */
async function expectEachEndedOnce(postgres: string, schema: string, jobIds: readonly string[]): Promise<void> {
  const jobs = await eventsByJob(postgres, schema);
  expect([...jobs.keys()].sort()).toEqual([...jobIds].sort());
  for (const [job_id, types] of jobs) {
    expect(
      types.filter((type) => type === 'job.created'),
      job_id,
    ).toHaveLength(1);
    expect(
      types.filter((type) => SETTLED.has(type)),
      job_id,
    ).toEqual(['job.completed']);
    expect(types.at(-1), job_id).toBe('job.completed');
  }
}

async function untilAllCompleted(c: Cluster, jobIds: readonly string[]): Promise<void> {
  const pending = new Set(jobIds);
  for (const since = Date.now(); pending.size > 0; await new Promise((resolve) => setTimeout(resolve, 100))) {
    for (const job_id of [...pending]) if ((await stateOf(c, job_id)) === 'completed') pending.delete(job_id);
    if (Date.now() - since > 60_000) throw new Error(`jobs never completed: ${[...pending].join(', ')}`);
  }
}

it('a node SIGKILLed while it holds the stream and the leases: the plugin moves by itself, every job ends once', async () => {
  const c = await cluster(POSTGRES_URL, NATS_URL);
  const p = await plugin(c);
  const streamOn = () => c.balancer.taken.filter(({ path }) => path.endsWith('/stream')).at(-1)!.node;
  const holder = streamOn();
  const jobIds = Array.from({ length: 24 }, () => randomUUID());
  for (const job_id of jobIds.slice(0, 12)) await createJob(c, job_id);
  // Some of them are delivered and running on the holder's stream, with its leases, when it dies.
  await waitFor('jobs running', () => Object.values(p.status().jobs).some((stage) => stage === 'started'));
  c.nodes[holder]!.kill();
  for (const job_id of jobIds.slice(12)) await createJob(c, job_id);
  await untilAllCompleted(c, jobIds);
  expect(streamOn()).not.toBe(holder);
  await expectEachEndedOnce(POSTGRES_URL, c.schema, jobIds);
});

it('a node drained with SIGTERM tells its plugin to reconnect: the stream moves at once, and the node exits 0', async () => {
  const c = await cluster(POSTGRES_URL, NATS_URL);
  const { logger, lines } = capturingLogger();
  const p = await plugin(c, logger);
  const streamOn = () => c.balancer.taken.filter(({ path }) => path.endsWith('/stream')).at(-1)!.node;
  const holder = streamOn();
  const before = [randomUUID(), randomUUID()];
  for (const job_id of before) await createJob(c, job_id);
  const since = Date.now();
  c.nodes[holder]!.kill('SIGTERM');
  expect((await c.nodes[holder]!.exited).code).toBe(0);
  await waitFor('the stream on another node', () => p.status().streamsOpened === 2 && p.status().stream === 'open');
  // Told to reconnect, the plugin does not back off as after a dropped stream.
  expect(lines.map((line) => line.msg)).toContain('the backend node drains: reconnecting');
  expect(Date.now() - since).toBeLessThan(5_000);
  expect(streamOn()).not.toBe(holder);
  const after = [randomUUID(), randomUUID()];
  for (const job_id of after) await createJob(c, job_id);
  await untilAllCompleted(c, [...before, ...after]);
  await expectEachEndedOnce(POSTGRES_URL, c.schema, [...before, ...after]);
});

it.each([
  ['NATS', ownNats],
  ['Redis', ownRedis],
] as const)(
  'PostgreSQL restarted, then the broker (%s), while jobs come in: none lost, none ended twice, no node restarted',
  async (_name, ownBroker) => {
    const [postgres, broker]: [OwnService, OwnService] = [await ownPostgres(), await ownBroker()];
    stops.push(
      () => postgres.stop(),
      () => broker.stop(),
    );
    const c = await cluster(postgres.url, broker.url);
    await plugin(c);
    const jobIds = Array.from({ length: 30 }, () => randomUUID());
    refusals.length = 0;
    const restarts: Array<Promise<void>> = [];
    for (const [i, job_id] of jobIds.entries()) {
      // While jobs keep coming: some are refused (503) while PostgreSQL is away, and taken when tried again.
      if (i === 8) {
        restarts.push(postgres.restart({ downMs: 1_000 }));
        // Meanwhile a node says so to its load balancer.
        const away = await eventually(
          'a node reporting the store away',
          () => request(`${c.nodes[0]!.url}/healthz`),
          (answer) => answer.status === 503,
          { everyMs: 50 },
        );
        expect(away.body).toMatchObject({ ok: false, store: { kind: 'postgres', reachable: false } });
      }
      if (i === 18) restarts.push(broker.restart({ downMs: 1_000 }));
      await createJob(c, job_id);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await Promise.all(restarts);
    await untilAllCompleted(c, jobIds);
    expect(refusals).toContain('503 store_unavailable');
    await expectEachEndedOnce(postgres.url, c.schema, jobIds);
    // Each node is connected again to both, by itself.
    for (const node of c.nodes) {
      const health = await eventually(
        'the node healthy',
        async () =>
          (await request(`${node.url}/healthz`)).body as { ok: boolean; store: { reachable: boolean }; broker: { connected: boolean } },
        (body) => body.ok && body.store.reachable && body.broker.connected,
      );
      expect(health).toMatchObject({ ok: true, store: { reachable: true }, broker: { connected: true } });
    }
  },
);
