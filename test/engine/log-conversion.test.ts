/**
 * The one log of a backend on PostgreSQL from before the partitions, converted into them when a node opens
 * the store (engine/reasoning/log-conversion.ts, storage/postgres/one-log.ts), on the machine's PostgreSQL:
 * a log written by an engine (integrations online and revoked, open and settled jobs, a stream, a profile,
 * a pairing) is converted once by nodes starting together and never again, and a backend relay on the
 * converted schema has every integration, job, version, stream position, profile and pairing as they were,
 * runs the open jobs' deadlines again, and appends after the snapshots from version 1.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { createBackendRelay, openBackendStore, type BackendRelay } from '../../adapters/backend/relay.js';
import { backendSeams } from '../../adapters/backend/seams.js';
import { inSlices } from '../../engine/core/snapshots.js';
import { BackendProjection } from '../../engine/reasoning/projection.js';
import { backendSnapshotCodec } from '../../engine/reasoning/snapshot.js';
import { ReasoningEngine } from '../../engine/reasoning/engine.js';
import { backendStreamOf, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { jobState, type JobSnapshot } from '../../machines/reasoning/job.js';
import { JobCreateBody } from '../../protocol/index.js';
import { SchemaMismatchError } from '../../storage/errors.js';
import { EventLog } from '../../storage/event-log.js';
import type { Conversion } from '../../storage/postgres/one-log.js';
import { PgPartitionedLog } from '../../storage/postgres/partitioned-log.js';
import { CAPABILITY_PROFILE, heartbeatOf } from '../support/backend.js';
import { SimulatedClock } from '../support/clock.js';
import { tempDir } from '../support/host.js';
import { readEvents } from '../support/log.js';
import { writeOneLog } from '../support/one-log.js';
import { POSTGRES_URL, testSchema } from '../support/postgres.js';
import { FakeSocket } from '../support/socket.js';
import { eventually } from '../support/wait.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const settle = () => new Promise((resolve) => setImmediate(resolve));

const job = (purpose: 'capability_probe' | 'live_analysis', deadline_ms: number) =>
  JobCreateBody.parse({
    job_id: randomUUID(),
    purpose,
    payload: purpose === 'capability_probe' ? {} : { session_id: 's', transcript: [{ speaker: 'a', text: 'hi' }] },
    deadline_ms,
  });

async function integrationOf(backend: ReasoningEngine): Promise<string> {
  const created = await backend.integrations.create('assistant-relay');
  if ('refused' in created) throw new Error(created.refused.message);
  return created.integration_id;
}

/** The frame ids a socket carried. */
const frameIds = (socket: FakeSocket) => [...socket.written.join('').matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));

/** The job's version: the id of the frame a follower gets first. */
async function versionOf(backend: ReasoningEngine, snapshot: JobSnapshot): Promise<number> {
  const socket = new FakeSocket();
  backend.follow(
    snapshot,
    undefined,
    () => socket,
    (view) => JSON.stringify({ state: jobState(view) }),
  );
  await settle();
  return frameIds(socket)[0]!;
}

/** What a backend reads of the log: each integration (and profile), each job (its state, context, version), the pairing. */
async function readAll(backend: ReasoningEngine, jobs: ReadonlyArray<readonly [string, string]>, pairingId: string) {
  // By id: they were all created at one instant, and the operator's list orders by creation alone.
  const integrations = (await backend.committedIntegrations())
    .map(({ integration, profile }) => ({ integration, profile }))
    .sort((a, b) => (a.integration.context.integration_id < b.integration.context.integration_id ? -1 : 1));
  const read = [];
  for (const [integrationId, jobId] of jobs) {
    const snapshot = (await backend.committedJob(integrationId, jobId))!;
    read.push({ state: jobState(snapshot), context: snapshot.context, version: await versionOf(backend, snapshot) });
  }
  const pairing = (await backend.pairings.committedPairing(pairingId))?.context;
  // As data: a statechart's snapshot taken back from a snapshot's text has the same data, not the same methods.
  return JSON.parse(JSON.stringify({ integrations, jobs: read, pairing })) as unknown;
}

/**
 * A backend's log, written by an engine on SQLite with a simulated clock: an online integration with its
 * stream (a probe completed: its profile; a job running), a revoked one (a job cancelled), a quiet one (a job
 * waiting, due in 2 minutes), an open pairing. Its events, what the engine read of them, and its clock.
 */
async function oneLog() {
  const dir = tempDir();
  const clock = new SimulatedClock();
  const log = EventLog.open<BackendEvent>({ path: join(dir, 'backend.db'), streamOf: backendStreamOf });
  const backend = await ReasoningEngine.start(backendSeams(log, { clock }), { pairing: 'open' });
  const online = await integrationOf(backend);
  const socket = new FakeSocket();
  await backend.openStream(online, undefined, () => socket);
  await backend.integrations.heartbeat(online, heartbeatOf());
  const probe = job('capability_probe', 600_000);
  await backend.createJob(online, probe);
  await settle();
  await backend.running(online, probe.job_id);
  await backend.result(online, probe.job_id, { result: CAPABILITY_PROFILE });
  const running = job('live_analysis', 600_000);
  await backend.createJob(online, running);
  await settle();
  await backend.running(online, running.job_id);
  expect(frameIds(socket)).toEqual([1, 2]);
  const revoked = await integrationOf(backend);
  const cancelled = job('live_analysis', 600_000);
  await backend.createJob(revoked, cancelled);
  await backend.cancel(revoked, cancelled.job_id);
  await backend.integrations.revoke(revoked);
  const quiet = await integrationOf(backend);
  const waiting = job('live_analysis', 120_000);
  await backend.createJob(quiet, waiting);
  const started = await backend.pairings.start({ provider_kind: 'assistant-relay', schema_version: 1, envelope_version: 1 }, '127.0.0.1');
  if (!('pairing' in started)) throw new Error('the pairing did not start');
  const pairingId = started.pairing.context.pairing_id;
  const jobs = [
    [online, probe.job_id],
    [online, running.job_id],
    [revoked, cancelled.job_id],
    [quiet, waiting.job_id],
  ] as const;
  const expected = await readAll(backend, jobs, pairingId);
  await backend.close();
  await log.close();
  const events = readEvents(join(dir, 'backend.db')) as unknown as BackendEvent[];
  rmSync(dir, { recursive: true, force: true });
  return { events, expected, jobs, pairingId, ids: { online, revoked, quiet }, waiting, now: clock.now() };
}

/** A snapshot of the one log's fold of its first `count` events, as its nodes wrote them. */
async function snapshotOf(events: readonly BackendEvent[], count: number): Promise<{ position: number; data: string }> {
  const projection = new BackendProjection();
  for (const event of events.slice(0, count)) projection.apply(event);
  const codec = backendSnapshotCodec(projection);
  return { position: count, data: await inSlices(codec.encode(codec.capture())) };
}

async function relayOn(schema: string, clock: SimulatedClock): Promise<BackendRelay> {
  const relay = await createBackendRelay({
    store: { url: POSTGRES_URL, schema },
    pairing: 'open',
    config: { clock, ownershipLeaseMs: 300 },
  });
  cleanups.push(() => relay.close());
  return relay;
}

async function sql<R extends pg.QueryResultRow>(schema: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

it('nodes starting together convert the one log once, a later start not again, and a relay on it reads everything as it was and runs its timers', async () => {
  const { events, expected, jobs, pairingId, ids, waiting, now } = await oneLog();
  const schema = testSchema();
  // A snapshot halfway that decodes; a newer one that does not, passed over and reported.
  await writeOneLog(schema, events, [await snapshotOf(events, 10), { position: events.length - 1, data: '{"kind":"backend","format":1}' }]);

  const conversions: Conversion[] = [];
  const reported: string[] = [];
  const open = () =>
    openBackendStore(
      { store: { url: POSTGRES_URL, schema } },
      { converted: (conversion) => conversions.push(conversion), report: (_, { what }) => reported.push(what) },
    );
  const nodes = await Promise.all([open(), open(), open()]);
  for (const node of nodes) await node.close();
  // The service's partition and one for each integration.
  expect(conversions).toEqual([{ position: events.length, partitions: 4 }]);
  expect(reported).toEqual([`using the one log's snapshot at position ${events.length - 1}`]);
  await (await open()).close();
  expect(conversions).toHaveLength(1);
  expect(await sql(schema, 'SELECT position, partitions FROM one_log_conversion')).toEqual([
    { position: String(events.length), partitions: 4 },
  ]);
  // Live: those with timers (an online plugin, open jobs), which an orphan scan finds.
  expect(await sql(schema, 'SELECT partition, version, live, owner FROM partitions ORDER BY partition')).toEqual(
    [
      { partition: '', version: '0', live: false, owner: null },
      { partition: ids.online, version: '0', live: true, owner: null },
      { partition: ids.revoked, version: '0', live: false, owner: null },
      { partition: ids.quiet, version: '0', live: true, owner: null },
    ].sort((a, b) => (a.partition < b.partition ? -1 : 1)),
  );
  expect(await sql(schema, 'SELECT DISTINCT version FROM partition_snapshots')).toEqual([{ version: '0' }]);
  // The one log stays, read-only.
  await expect(sql(schema, `INSERT INTO events VALUES (1000, '', 'x', 0, '{}')`)).rejects.toThrow(/read-only/);
  await expect(sql(schema, 'UPDATE log_head SET position = 0')).rejects.toThrow(/read-only/);

  const clock = new SimulatedClock(now);
  const { backend } = await relayOn(schema, clock);
  expect(await readAll(backend, jobs, pairingId)).toEqual(expected);

  // The stream goes on from the frame id it had reached; the partition's first event after the snapshot is its version 1.
  const socket = new FakeSocket();
  await backend.openStream(ids.online, undefined, () => socket);
  await backend.createJob(ids.online, job('live_analysis', 600_000));
  await eventually(
    'the next frame',
    () => frameIds(socket),
    (frames) => frames.length > 0,
  );
  expect(frameIds(socket)).toEqual([3]);
  const versions = await sql<{ version: string }>(schema, 'SELECT version FROM partition_events WHERE partition = $1 ORDER BY version', [
    ids.online,
  ]);
  expect(versions.map(({ version }) => Number(version))).toEqual(versions.map((_, i) => i + 1));

  // The quiet integration's job, claimed as an orphan: its deadline fires.
  await eventually(
    'the waiting job expired',
    async () => {
      clock.increment(10_000);
      return jobState((await backend.committedJob(ids.quiet, waiting.job_id))!);
    },
    (state) => state === 'expired',
  );
});

it('records an empty one log as converted, and refuses a schema that holds both the one log and partitions', async () => {
  const fresh = testSchema();
  await (await openBackendStore({ store: { url: POSTGRES_URL, schema: fresh } })).close();
  expect(await sql(fresh, 'SELECT position, partitions FROM one_log_conversion')).toEqual([{ position: '0', partitions: 0 }]);

  const { events } = await oneLog();
  const both = testSchema();
  await writeOneLog(both, events);
  // A node of a build that ran partitioned without converting: its partitions, beside the one log.
  const partitioned = await PgPartitionedLog.open<BackendEvent>({ url: POSTGRES_URL, schema: both, streamOf: backendStreamOf });
  await partitioned.append(randomUUID(), 0, () => ({ events: [], live: true }), { node: 'n' });
  await partitioned.close();
  await expect(openBackendStore({ store: { url: POSTGRES_URL, schema: both } })).rejects.toBeInstanceOf(SchemaMismatchError);
  expect(await sql(both, 'SELECT count(*)::int AS n FROM one_log_conversion')).toEqual([{ n: 0 }]);
});
