/**
 * Three backend nodes as one service, under what operators fear: a node SIGKILLed while it holds the
 * plugin's stream and its jobs' leases; PostgreSQL and the broker restarted while jobs come in. Each
 * time, every job a client created ends exactly once (completed: the plugin answers them all), none is
 * lost, and the service resumes by itself. The nodes are the built CLI (`backend --store --pubsub`)
 * behind a balancer that sends each request to the next node; the plugin is the real one.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { builtinReasoner, startPlugin, type Plugin } from '../../index.js';
import type { Reasoner } from '../../adapters/reasoners/reasoner.js';
import type { BaseLogger } from 'pino';
import { capturingLogger } from '../plugin/fixture.js';
import { NATS_URL } from '../support/brokers.js';
import { killChildren } from '../support/child.js';
import { tempDir } from '../support/host.js';
import { request } from '../support/http.js';
import { POSTGRES_URL } from '../support/postgres.js';
import { eventsByJob, PAYLOAD, SETTLED, startCluster, type Integration, type ProcessCluster } from '../support/process-cluster.js';
import { ownNats, ownPostgres, ownRedis, type OwnService } from '../support/services.js';
import { eventually, waitFor } from '../support/wait.js';

const stops: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await killChildren();
  for (const stop of stops.splice(0).reverse()) await stop();
});

interface Cluster extends ProcessCluster {
  readonly integration: Integration;
}

/** Three `backend` processes on one schema and namespace, behind a balancer, with one integration. */
async function cluster(postgres: string, broker: string): Promise<Cluster> {
  const c = await startCluster(postgres, broker, stops);
  return { ...c, integration: await c.addIntegration() };
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

/** Every job was created once and ended once, completed; and nothing else is in the log. */
async function expectEachEndedOnce(c: Cluster, jobIds: readonly string[]): Promise<void> {
  const jobs = await eventsByJob(c);
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
  await expectEachEndedOnce(c, jobIds);
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
  await waitFor('the stream on another node', () => p.status().streamsOpened === 2 && p.status().stream === 'open');
  // Told to reconnect as the drain begins, the plugin does not back off as after a dropped stream.
  expect(lines.map((line) => line.msg)).toContain('the backend node drains: reconnecting');
  expect(Date.now() - since).toBeLessThan(5_000);
  expect((await c.nodes[holder]!.exited).code).toBe(0);
  expect(streamOn()).not.toBe(holder);
  const after = [randomUUID(), randomUUID()];
  for (const job_id of after) await createJob(c, job_id);
  await untilAllCompleted(c, [...before, ...after]);
  await expectEachEndedOnce(c, [...before, ...after]);
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
    await expectEachEndedOnce(c, jobIds);
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
