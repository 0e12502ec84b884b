/**
 * Who owns an integration, among three backend nodes on PostgreSQL (engine/reasoning/ownership.ts), seen
 * from the shared log: a SIGKILLed owner's integrations are served by another node within 5 s, their
 * deadlines and delivery leases firing there, every job ending once; an owner paused past its lease
 * (SIGSTOP) and woken while it has timers due and a stream still open commits nothing as the owner once
 * another node took over (each fence committed by one node, fences growing in each partition's order);
 * a node started again folds no integration it is not asked for. On NATS and on Redis.
 */
import { afterEach, expect, it } from 'vitest';
import { NATS_URL, REDIS_URL } from '../support/brokers.js';
import { killChildren } from '../support/child.js';
import { request } from '../support/http.js';
import { scrape } from '../support/metrics.js';
import { POSTGRES_URL } from '../support/postgres.js';
import {
  createJob,
  expectEachExpiredOnce,
  expectFencedOnce,
  leaseOf,
  pauseWhileRenewing,
  rowsOf,
  untilAllEnded,
} from '../support/ownership.js';
import { OPERATOR, startCluster, type ClusterNode, type Integration } from '../support/process-cluster.js';
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

it.each(BROKERS)(
  'a SIGKILLed owner (%s): its integrations are served by another node within 5 s, deadlines and leases fire there, every job ends once',
  async (name, broker) => {
    const c = await startCluster(POSTGRES_URL, broker, stops, { flags: QUICK_LEASES });
    // An integration whose plugin takes jobs and never answers: the node holding its stream owns it.
    const streamed = await c.addIntegration();
    const plugin = silentPlugin(() => c.balancer.url, streamed);
    stops.push(async () => plugin.stop());
    await waitFor('the stream', plugin.open);
    const { owner } = await eventually(
      'its owner',
      () => leaseOf(c, streamed.integration_id),
      (lease) => lease.owner !== null,
    );
    const victim = c.nodes.findIndex((node) => node.epoch === owner);
    expect(victim).toBeGreaterThanOrEqual(0);
    // Two with no plugin, their jobs created at that node: the creator claims them, and only deadlines end their jobs.
    const plain = [await c.addIntegration(), await c.addIntegration()];
    const delivered = [];
    for (let i = 0; i < 3; i += 1) delivered.push(await createJob(c.balancer.url, streamed, 7_000));
    await waitFor('the jobs delivered', () => plugin.received().length >= 3);
    const deadlined = [];
    for (const integration of plain)
      for (let i = 0; i < 3; i += 1) deadlined.push(await createJob(c.nodes[victim]!.url, integration, 2_000));
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
    console.log(`takeover after SIGKILL (${name}), ms since the kill:`, JSON.stringify(Object.fromEntries(taken)));
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
      for (const row of rows.filter(
        ({ version, type }) => version > atKill.get(id)! && (type === 'job.expired' || type === 'job.released'),
      ))
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

it.each(BROKERS)(
  'an owner paused past its lease (%s) and woken with timers due and its stream open commits nothing more as the owner',
  async (name, broker) => {
    const c = await startCluster(POSTGRES_URL, broker, stops, { flags: [...QUICK_LEASES, '--ownership-lease', '1s'] });
    const integration = await c.addIntegration();
    let via = c.balancer.url;
    const plugin = silentPlugin(() => via, integration);
    stops.push(async () => plugin.stop());
    await waitFor('the stream', plugin.open);
    const { owner } = await eventually(
      'its owner',
      () => leaseOf(c, integration.integration_id),
      (lease) => lease.owner !== null,
    );
    const old = c.nodes.findIndex((node) => node.epoch === owner);
    const awake = c.nodes[(old + 1) % c.nodes.length]!;
    // Delivered on the owner's stream; their delivery leases (2 s), and some deadlines, come due while it sleeps.
    const jobIds: string[] = [];
    for (const deadline of [2_000, 2_000, 2_000, 7_000, 7_000, 7_000]) jobIds.push(await createJob(awake.url, integration, deadline));
    await waitFor('the jobs delivered', () => plugin.received().length >= jobIds.length);
    // From now on its plugin, when told to reconnect, reaches a node that is awake (as a balancer's health check would have it).
    via = awake.url;
    await pauseWhileRenewing(c, c.nodes[old]!, integration.integration_id);
    const pausedAt = Date.now();
    const taken = await eventually(
      'another owner',
      () => leaseOf(c, integration.integration_id),
      (lease) => lease.owner !== null && lease.owner !== owner,
      { timeoutMs: 2_500, everyMs: 25 },
    );
    const takenAfter = Date.now() - pausedAt;
    // Jobs created meanwhile: the old owner hears of them when it wakes, and its stream would deliver them.
    for (let i = 0; i < 3; i += 1) jobIds.push(await createJob(awake.url, integration, 5_000));
    await eventually(
      'the new owner deciding as the owner while the old one sleeps',
      () => rowsOf(c, integration.integration_id),
      (rows) => rows.some((row) => row.fence === taken.fence && (row.type === 'job.expired' || row.type === 'job.released')),
      { timeoutMs: 3_000, everyMs: 25 },
    );
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 3_000 - (Date.now() - pausedAt))));
    c.nodes[old]!.kill('SIGCONT');
    console.log(`another owner ${takenAfter} ms after the owner paused (${name})`);

    await untilAllEnded(c, jobIds, 15_000);
    await expectEachExpiredOnce(c, jobIds);
    const rows = await rowsOf(c, integration.integration_id);
    expectFencedOnce(rows);
    const firstTaken = rows.find((row) => row.fence !== null && row.node !== owner)!;
    expect(rows.filter((row) => row.node === owner && row.fence !== null && row.version > firstTaken.version)).toEqual([]);
    // Its plugin moved: the old owner ended its stream once it knew, and the jobs created meanwhile went out elsewhere.
    expect(plugin.opened()).toBeGreaterThanOrEqual(2);
    for (const job_id of jobIds.slice(6)) expect(plugin.received().some((frame) => frame.job_id === job_id)).toBe(true);
    // The old node is healthy, holds no stream, owns nothing, and still takes jobs (as any node does).
    const oldNode = c.nodes[old]!;
    const health = await request(`${oldNode.url}/healthz`);
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ ok: true, epoch: owner, store: { reachable: true } });
    const metrics = await scrape(oldNode.url, OPERATOR);
    expect(metrics.value('assistant_relay_streams_open', { kind: 'jobs' })).toBe(0);
    expect((await leaseOf(c, integration.integration_id)).owner).not.toBe(owner);
    await createJob(oldNode.url, integration, 60_000);
    // Being fenced out is how ownership moves, not a failure: it reported none.
    expect(oldNode.stderr()).not.toMatch(/"level":(50|60)/);
  },
  60_000,
);

it.each(BROKERS)(
  'a node started again (%s) folds no integration until it is asked for one, then that one alone',
  async (_name, broker) => {
    const c = await startCluster(POSTGRES_URL, broker, stops);
    const integrations: Integration[] = [];
    const jobIds: string[] = [];
    for (let i = 0; i < 50; i += 1) {
      integrations.push(await c.addIntegration());
      jobIds.push(await createJob(c.balancer.url, integrations[i]!, 1_000));
    }
    // Each job ended by its deadline on its integration's owner: nothing is left to time, and no node owns any.
    await untilAllEnded(c, jobIds, 15_000);
    await eventually(
      'every lease given up',
      () => c.sql<{ owned: string }>('SELECT count(*) AS owned FROM partitions WHERE owner IS NOT NULL'),
      ([row]) => row!.owned === '0',
    );
    const held = async (node: ClusterNode) => (await scrape(node.url, OPERATOR)).value('assistant_relay_integrations_held');
    // The nodes that served them hold what they served lately.
    expect((await held(c.nodes[1]!)) ?? 0).toBeGreaterThan(1);

    c.nodes[0]!.kill('SIGTERM');
    expect((await c.nodes[0]!.exited).code).toBe(0);
    const restarted = await c.restart(0);
    // A few looks and lease ticks later, still none.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await held(restarted)).toBe(0);
    const asked = integrations[7]!;
    const read = await request(`${restarted.url}/api/v1/assistant/integrations/${asked.integration_id}/jobs/${jobIds[7]}`, {
      token: asked.client_token,
    });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ state: 'expired' });
    expect(await held(restarted)).toBe(1);
  },
  60_000,
);
