/**
 * Retention against what a caller leaves behind (issue 23, part 2), over loopback HTTP with a simulated
 * clock. A revoked integration, with its jobs, token rotations, heartbeats, key rotation requests and
 * presence, is gone from the log after the retention, on SQLite and on PostgreSQL, and its tokens stay
 * refused, also after a restart; a pairing that ended without an integration (what anyone can make) is
 * gone an hour after its expiry, long before the retention; the plugin forgets a closed job but for its
 * id, which it keeps until the job's deadline, so that a backend sending it again does not get it run twice.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createBackendRelay, type BackendRelay } from '../../adapters/backend/relay.js';
import type { Plugin } from '../../adapters/plugin/index.js';
import { RETENTION_CHECK_MS } from '../../engine/core/retention.js';
import { jobStream } from '../../machines/reasoning/backend-events.js';
import { CAPABILITY_PROFILE, heartbeatOf } from '../support/backend.js';
import { SimulatedClock } from '../support/clock.js';
import { tempDir } from '../support/host.js';
import { request } from '../support/http.js';
import { readEvents } from '../support/log.js';
import { POSTGRES_URL, testSchema } from '../support/postgres.js';
import { verifyLogFile } from '../support/verify-log.js';
import { waitFor } from '../support/wait.js';
import { makeJob } from '../plugin/fake-backend.js';
import { answering, capturingLogger, closed, usePlugins } from '../plugin/fixture.js';

const DAY = 24 * 60 * 60 * 1000;
const OPERATOR = 'operator-token-for-the-retention-tests';
const BYTES32 = 'A'.repeat(43);

type Store = 'SQLite' | 'PostgreSQL';

/** A backend on one log (an SQLite file in `dir`, or a PostgreSQL schema), served on loopback, that restarts on the same log. */
function backendOn(store: Store, clock: SimulatedClock) {
  const dir = tempDir();
  const schema = testSchema();
  const running: BackendRelay[] = [];
  const db = join(dir, 'backend.db');
  const where = store === 'SQLite' ? { db } : { store: { url: POSTGRES_URL, schema } };
  /** Rows of a query on the log's tables (`{t}` names a table). */
  const rows = async <R extends Record<string, unknown>>(text: string): Promise<R[]> => {
    if (store === 'SQLite') {
      const conn = new Database(db, { readonly: true, fileMustExist: true });
      try {
        return conn.prepare(text.replaceAll('{t}', '')).all() as R[];
      } finally {
        conn.close();
      }
    }
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      return (await client.query<R>(text.replaceAll('{t}', `${schema}.`))).rows;
    } finally {
      await client.end();
    }
  };
  return {
    async start(): Promise<string> {
      const relay = await createBackendRelay({
        ...where,
        operatorToken: OPERATOR,
        pairing: 'open',
        config: { clock, retentionMs: 7 * DAY },
      });
      running.push(relay);
      return relay.listen();
    },
    async stop(): Promise<void> {
      for (const relay of running.splice(0)) await relay.close();
    },
    /** How many events each stream holds. */
    async streams(): Promise<Map<string, number>> {
      return new Map(
        // On PostgreSQL the log is partitioned by integration: a stream's name is its partition's alone, and unique.
        (
          await rows<{ stream: string; n: number | string }>(
            `SELECT stream, count(*) AS n FROM {t}${store === 'SQLite' ? 'events' : 'partition_events'} GROUP BY stream`,
          )
        ).map(({ stream, n }) => [stream, Number(n)]),
      );
    },
    async presence(): Promise<string[]> {
      return store === 'SQLite'
        ? []
        : (await rows<{ integration_id: string }>('SELECT integration_id FROM {t}presence ORDER BY integration_id')).map(
            (row) => row.integration_id,
          );
    },
    async verify(): Promise<void> {
      if (store === 'SQLite') await verifyLogFile(db);
    },
  };
}

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

interface Created {
  readonly integration_id: string;
  readonly relay_token: string;
  readonly client_token: string;
}

async function createIntegration(url: string): Promise<Created> {
  const created = await request(`${url}/api/v1/admin/integrations`, { token: OPERATOR, body: {} });
  expect(created.status).toBe(201);
  return created.body as Created;
}

const admin = (url: string, path: string) => request(`${url}/api/v1/admin/integrations/${path}`, { method: 'POST', token: OPERATOR });

/** Moves the clock an hour at a time, letting each retention pass run (the next is armed once it is done), until `done`. */
async function passUntil(clock: SimulatedClock, done: () => Promise<boolean>, what: string): Promise<void> {
  for (let hour = 0; !(await done()); hour += 1) {
    if (hour > 48) throw new Error(`no pass forgot ${what}`);
    clock.increment(RETENTION_CHECK_MS);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.each<Store>(['SQLite', 'PostgreSQL'])('a backend on %s', (store) => {
  it('forgets a revoked integration after the retention, with its jobs, its events and its presence; its tokens stay refused', async () => {
    const clock = new SimulatedClock();
    const backend = backendOn(store, clock);
    cleanup.push(() => backend.stop());
    let url = await backend.start();
    clock.increment(0);
    const [gone, kept] = [await createIntegration(url), await createIntegration(url)];
    const base = (integration: Created) => `${url}/api/v1/assistant/integrations/${integration.integration_id}`;
    for (const integration of [gone, kept])
      expect((await request(`${base(integration)}/heartbeat`, { token: integration.relay_token, body: heartbeatOf() })).status).toBe(200);

    // What the integration held: a probe whose result is its capability profile, a cancelled job, one left to expire, a rotated token, a key rotation asked for.
    const [probe, cancelled, expiring] = [randomUUID(), randomUUID(), randomUUID()];
    const create = (job_id: string, purpose: string, payload: unknown) =>
      request(`${base(gone)}/jobs`, { token: gone.client_token, body: { job_id, purpose, payload, deadline_ms: 60_000 } });
    expect((await create(probe, 'capability_probe', {})).status).toBe(201);
    expect((await create(cancelled, 'capability_probe', {})).status).toBe(201);
    expect((await create(expiring, 'capability_probe', {})).status).toBe(201);
    expect((await request(`${base(gone)}/jobs/${probe}/running`, { method: 'POST', token: gone.relay_token })).status).toBe(200);
    expect(
      (await request(`${base(gone)}/jobs/${probe}/result`, { token: gone.relay_token, body: { result: CAPABILITY_PROFILE } })).status,
    ).toBe(200);
    expect((await request(`${base(gone)}/jobs/${cancelled}/cancel`, { method: 'POST', token: gone.client_token })).status).toBe(200);
    const rotated = await admin(url, `${gone.integration_id}/tokens/client/rotate`);
    const clientToken = (rotated.body as { token: string }).token;
    expect(
      (
        await request(`${base(gone)}/rekeys`, {
          token: clientToken,
          body: { rekey_id: randomUUID(), kid: 'A'.repeat(12), client_key: BYTES32, mac: BYTES32 },
        })
      ).status,
    ).toBeLessThan(300);
    const keptProbe = randomUUID();
    expect(
      (
        await request(`${base(kept)}/jobs`, {
          token: kept.client_token,
          body: { job_id: keptProbe, purpose: 'capability_probe', payload: {}, deadline_ms: 60_000 },
        })
      ).status,
    ).toBe(201);
    expect((await admin(url, `${gone.integration_id}/revoke`)).status).toBe(200);

    const before = await backend.streams();
    for (const stream of [
      `integration:${gone.integration_id}`,
      jobStream(gone.integration_id, probe),
      jobStream(gone.integration_id, cancelled),
      jobStream(gone.integration_id, expiring),
    ])
      expect(before.get(stream)).toBeGreaterThan(0);
    if (store === 'PostgreSQL') expect(await backend.presence()).toEqual([gone.integration_id, kept.integration_id].sort());

    // Within the retention the revoked integration stays (its jobs expire meanwhile); past it, the next pass forgets it.
    clock.increment(7 * DAY - RETENTION_CHECK_MS);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await backend.streams()).get(`integration:${gone.integration_id}`)).toBeGreaterThan(0);
    await passUntil(clock, async () => !(await backend.streams()).has(`integration:${gone.integration_id}`), 'the revoked integration');

    const after = await backend.streams();
    for (const stream of [
      `integration:${gone.integration_id}`,
      jobStream(gone.integration_id, probe),
      jobStream(gone.integration_id, cancelled),
      jobStream(gone.integration_id, expiring),
    ])
      expect(after.has(stream)).toBe(false);
    // The live integration keeps its events, and its job (settled longer ago than the retention) goes as any job does.
    expect(after.get(`integration:${kept.integration_id}`)).toBeGreaterThan(0);
    expect(await backend.presence()).toEqual(store === 'PostgreSQL' ? [kept.integration_id] : []);

    // Every token it ever had is refused as a wrong token is, on every route, and after a restart.
    const refused = async () => {
      for (const token of [gone.client_token, clientToken]) expect((await request(base(gone), { token })).status).toBe(401);
      expect((await request(`${base(gone)}/heartbeat`, { token: gone.relay_token, body: heartbeatOf() })).status).toBe(401);
      expect((await request(`${base(gone)}/jobs/${probe}`, { token: clientToken })).status).toBe(401);
      expect(
        (
          await request(`${base(gone)}/jobs`, {
            token: clientToken,
            body: { job_id: randomUUID(), purpose: 'capability_probe', payload: {} },
          })
        ).status,
      ).toBe(401);
      expect((await admin(url, `${gone.integration_id}/revoke`)).status).toBe(404);
      const listed = (await request(`${url}/api/v1/admin/integrations`, { token: OPERATOR })).body as {
        integrations: Array<{ integration_id: string }>;
      };
      expect(listed.integrations.map(({ integration_id }) => integration_id)).toEqual([kept.integration_id]);
    };
    await refused();
    await backend.stop();
    url = await backend.start();
    await refused();
    await backend.stop();
    await backend.verify();
  });

  it('forgets a pairing that ended without an integration an hour after its expiry, long before the retention', async () => {
    const clock = new SimulatedClock();
    const backend = backendOn(store, clock);
    cleanup.push(() => backend.stop());
    const url = await backend.start();
    clock.increment(0);
    const started = await request(`${url}/api/v1/pairings`, {
      body: { provider_kind: 'assistant-relay', schema_version: 1, envelope_version: 1 },
    });
    expect(started.status).toBe(201);
    const { pairing_id, pairing_token } = started.body as { pairing_id: string; pairing_token: string };
    expect(
      (await request(`${url}/api/v1/pairings/${pairing_id}/abort`, { token: pairing_token, body: { reason: 'changed my mind' } })).status,
    ).toBe(200);
    expect((await backend.streams()).get(`pairing:${pairing_id}`)).toBe(2);

    // Its expiry is ten minutes after its start; an hour after that it goes, at the hourly pass that follows.
    clock.increment(10 * 60_000 + RETENTION_CHECK_MS - 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await backend.streams()).has(`pairing:${pairing_id}`)).toBe(true);
    await passUntil(clock, async () => !(await backend.streams()).has(`pairing:${pairing_id}`), 'the aborted pairing');
    expect(clock.now()).toBeLessThan(Date.UTC(2026, 0, 1) + DAY);
    expect((await request(`${url}/api/v1/pairings/${pairing_id}`, { token: pairing_token })).status).toBe(401);
    await backend.stop();
    await backend.verify();
  });
});

describe('the plugin', () => {
  const fixture = usePlugins();

  /** The plugin's stream open again: the hours the clock skipped made it count the stream as silent, and its reconnection waits on the clock. */
  async function streaming(plugin: Plugin, clock: SimulatedClock): Promise<void> {
    for (let tries = 0; !(plugin.status().stream === 'open' && fixture.backend().streams > 0); tries += 1) {
      if (tries > 100) throw new Error('the stream did not open again');
      clock.increment(1_000);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('forgets a closed job after the retention, keeps its id until its deadline (a redelivery is not run, after a restart too), then keeps nothing', async () => {
    const clock = new SimulatedClock(Date.now());
    const reasoner = answering();
    const { logger, lines } = capturingLogger();
    const options = { reasoner, clock, logger, retentionMs: 10 * 60_000 };
    const { plugin, backend } = await fixture.open(options);
    const db = join(fixture.dir(), 'plugin.db');
    clock.increment(0);
    // A deadline three hours on: longer than the retention and the pass after it.
    const job = makeJob(clock.now(), {}, 3 * RETENTION_CHECK_MS);
    const id = job.job_id as string;
    backend.send(job);
    await backend.until(closed(plugin, job), 'the job closed');
    expect(readEvents(db).filter((event) => event.job_id === id)).toHaveLength(4);

    clock.increment(RETENTION_CHECK_MS);
    await waitFor('the job forgotten', () => plugin.status().jobs[id] === undefined);
    await waitFor('its events removed', () => readEvents(db).every((event) => event.job_id !== id));
    expect(readEvents(db)).toEqual([
      { type: 'plugin.jobs_forgotten', job_ids: [id], dedupe: { [id]: Date.parse(job.deadline_at as string) }, at: clock.now() },
    ]);

    // Sent again before its deadline: not run, not answered again; and so after a restart.
    const notRun = () =>
      lines.filter((line) => line.msg === 'a job closed and forgotten was sent again: not run' && line.job_id === id).length;
    await streaming(plugin, clock);
    backend.send(job);
    await waitFor('the redelivery seen', () => notRun() === 1);
    await plugin.stop();
    const restarted = await fixture.open(options);
    restarted.backend.send(job);
    await waitFor('the redelivery seen after a restart', () => notRun() === 2);
    expect(reasoner.calls).toHaveLength(1);
    expect(backend.running).toEqual([id]);
    expect(backend.resultsOf(id)).toHaveLength(1);

    // Past its deadline nothing of it is kept.
    clock.increment(0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (let hour = 0; JSON.stringify(readEvents(db)).includes(id); hour += 1) {
      if (hour > 4) throw new Error('the dedupe entry outlived the deadline');
      clock.increment(RETENTION_CHECK_MS);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(clock.now()).toBeGreaterThanOrEqual(Date.parse(job.deadline_at as string));
    expect(readEvents(db)).toEqual([{ type: 'plugin.jobs_forgotten', job_ids: [], dedupe: {}, at: expect.any(Number) }]);
  });
});
