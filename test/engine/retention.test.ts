/**
 * Retention (issue 12, item 2): sessions ended longer ago than the retention are forgotten by a logged
 * `sessions.forgotten` event and their events removed; a restart after compaction equals a restart
 * without it (the same folded state, the same answers on the wire), because the event is folded either way.
 */
import { cpSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, expect, it } from 'vitest';
import { ChatProjection } from '../../engine/chat/projection.js';
import { DEFAULT_SESSION_LIMITS } from '../../engine/chat/config.js';
import { RETENTION_CHECK_MS } from '../../engine/core/retention.js';
import { encodeState } from '../../engine/core/state-codec.js';
import { isHostEvent, streamOf, type DomainEvent } from '../../machines/chat/events.js';
import { EventLog } from '../../storage/event-log.js';
import { backendStreamOf, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { BackendProjection } from '../../engine/reasoning/projection.js';
import { heartbeatOf, serveBackend } from '../support/backend.js';
import { verifyLogFile } from '../support/verify-log.js';
import { SimulatedClock } from '../support/clock.js';
import { readEvents, tempDir } from '../support/host.js';
import { Relay, aMoment, stopAll, until } from '../http/fixture.js';

afterEach(stopAll);

const DAY = 24 * 60 * 60 * 1000;

/** The events of the log, and the fold of them from nothing (snapshots aside). */
function foldOf(db: string): { events: DomainEvent[]; state: string } {
  const events = readEvents(db) as unknown as DomainEvent[];
  const projection = new ChatProjection(DEFAULT_SESSION_LIMITS);
  for (const event of events) projection.apply(event);
  return { events, state: JSON.stringify(encodeState(projection.state())) };
}

function eventsAfter(db: string, position: number): DomainEvent[] {
  const conn = new Database(db, { readonly: true });
  try {
    return (conn.prepare('SELECT data FROM events WHERE position > ? ORDER BY position').all(position) as Array<{ data: string }>).map(
      (row) => JSON.parse(row.data),
    );
  } finally {
    conn.close();
  }
}

function dropSnapshots(db: string): void {
  const conn = new Database(db);
  conn.exec('DELETE FROM snapshots');
  conn.close();
}

it('forgets sessions ended longer ago than the retention and removes their events; a restart after it equals one without it', async () => {
  const clock = new SimulatedClock();
  // Sessions end only when told to (not idle across the eight days).
  const sessionIdleTtlMs = 30 * DAY;
  const first = await Relay.start({ clock, retentionMs: Infinity, sessionIdleTtlMs });
  await first.turn('old', 't1', { message: 'from last week' });
  await first.t.host.endSession('old');
  await first.turn('kept', 't1', { message: 'still here' });
  await first.turn('kept', 't2', { message: 'and here' });
  const dir = await first.closeKeepingLog();
  const db = join(dir, 'relay.db');

  // The same log twice: one compacted by retention, one where only the event is appended.
  const uncompactedDir = tempDir();
  cpSync(dir, uncompactedDir, { recursive: true });

  clock.increment(8 * DAY);
  const compacting = await Relay.start({ clock, dir, retentionMs: 7 * DAY, sessionIdleTtlMs });
  // The first pass is armed for right after the start.
  clock.increment(0);
  await until(() => compacting.count('sessions.forgotten') === 1, 'the retention pass');
  expect(compacting.t.host.session('old')).toBeUndefined();
  expect(compacting.taskSession('kept').backlog).toHaveLength(2);
  await compacting.closeKeepingLog();

  const compacted = foldOf(db);
  expect(compacted.events.filter((event) => !isHostEvent(event) && streamOf(event) === 'old')).toEqual([]);
  const forgotten = compacted.events.find((event) => event.type === 'sessions.forgotten')!;
  expect(forgotten).toMatchObject({ session_ids: ['old'], ended_before: clock.now() - 7 * DAY });

  // Without compaction: the same events, the `old` session's still there, and the same forgetting.
  const uncompactedDb = join(uncompactedDir, 'relay.db');
  const log = EventLog.open<DomainEvent>({ path: uncompactedDb, streamOf });
  // Positions survive removal: what the compacting host appended is what lies past the copy's last position.
  for (const event of eventsAfter(db, log.lastPosition)) await log.append(event);
  await log.close();
  const uncompacted = foldOf(uncompactedDb);
  expect(uncompacted.events.length).toBeGreaterThan(compacted.events.length);
  expect(uncompacted.state).toBe(compacted.state);

  // And on the wire, two hosts started on the two logs (from the whole log each) answer alike.
  dropSnapshots(db);
  dropSnapshots(uncompactedDb);
  const [a, b] = [
    await Relay.start({ clock, dir, retentionMs: Infinity, sessionIdleTtlMs }),
    await Relay.start({ clock, dir: uncompactedDir, retentionMs: Infinity, sessionIdleTtlMs }),
  ];
  const [viewA, viewB] = [a.taskSession('kept'), b.taskSession('kept')];
  expect({ ...viewA, readers: 0 }).toEqual({ ...viewB, readers: 0 });
  expect(a.t.host.session('old')).toBeUndefined();
  expect(b.t.host.session('old')).toBeUndefined();
  // A forgotten session id used again opens a new session, on both.
  for (const relay of [a, b]) expect((await relay.post({ session_id: 'old', task_id: 't9', text: 'hello again' })).status).toBe(202);
});

it('keeps a session ended within the retention, and forgets it at the first hourly pass after', async () => {
  const clock = new SimulatedClock();
  const relay = await Relay.start({ clock, retentionMs: 7 * DAY });
  await relay.turn('recent', 't1', { message: 'x' });
  await relay.t.host.endSession('recent');
  const ended = clock.now();
  // Each pass arms the next (an hour on) once it is done: the first runs at once, the next at the time it is let to.
  clock.increment(0);
  await aMoment();
  clock.incrementTo(ended + 7 * DAY - 1);
  await aMoment();
  expect(relay.count('sessions.forgotten')).toBe(0);
  expect(relay.t.host.session('recent')).toBeDefined();
  clock.increment(RETENTION_CHECK_MS);
  await until(() => relay.count('sessions.forgotten') === 1, 'the hourly pass after the retention ran out');
  expect(relay.t.host.session('recent')).toBeUndefined();
  expect(clock.now() - ended).toBeGreaterThan(7 * DAY);
});

it('a backend forgets jobs settled longer ago than the retention, and removes their events', async () => {
  const clock = new SimulatedClock();
  const served = await serveBackend({ config: { clock, retentionMs: 7 * DAY } });
  clock.increment(0);
  const integration = await served.backend.integrations.create('assistant-relay');
  if ('refused' in integration) throw new Error(integration.refused.message);
  const jobIds = [randomUUID(), randomUUID()];
  for (const job_id of jobIds) {
    await served.backend.createJob(integration.integration_id, {
      job_id,
      purpose: 'capability_probe',
      payload: {},
      byo: false,
      deadline_ms: 60_000,
    });
  }
  await served.backend.cancel(integration.integration_id, jobIds[0]!);
  const before = readEvents(served.db).length;

  // The second job expires at its deadline; the pass due an hour after the start finds nothing yet, and arms the next.
  clock.increment(8 * DAY);
  await aMoment();
  // That one finds both settled long enough ago, and forgets them in one event.
  clock.increment(RETENTION_CHECK_MS);
  await until(() => readEvents(served.db).some((event) => event.type === 'backend.forgotten'), 'the retention pass');
  for (const jobId of jobIds) expect(await served.backend.committedJob(integration.integration_id, jobId)).toBeUndefined();
  const events = readEvents(served.db) as unknown as BackendEvent[];
  expect(events.filter((event) => event.type.startsWith('job.'))).toEqual([]);
  expect(events.find((event) => event.type === 'backend.forgotten')).toMatchObject({
    jobs: { [integration.integration_id]: expect.arrayContaining(jobIds) },
    job_ids: expect.arrayContaining(jobIds),
    pairing_ids: [],
  });
  expect(events.length).toBeLessThan(before);
  await served.stop();
});

/** The backend projection's state folded from every event of a backend log, as a snapshot would encode it. */
function backendFoldOf(db: string): string {
  const projection = new BackendProjection();
  for (const event of readEvents(db) as unknown as BackendEvent[]) projection.apply(event);
  return JSON.stringify(encodeState(projection.state()));
}

function streamsOf(db: string): Map<string, number> {
  const conn = new Database(db, { readonly: true });
  try {
    return new Map(
      (conn.prepare('SELECT stream, count(*) AS n FROM events GROUP BY stream').all() as Array<{ stream: string; n: number }>).map(
        ({ stream, n }) => [stream, n],
      ),
    );
  } finally {
    conn.close();
  }
}

it('a backend forgets a revoked integration and an aborted pairing, and compacts a live integration; a fold with or without what it removed ends the same', async () => {
  const clock = new SimulatedClock();
  const config = { clock, retentionMs: 7 * DAY };
  const first = await serveBackend({ config });
  clock.increment(0);
  const { backend } = first;
  const [live, revoked] = [await backend.integrations.create('assistant-relay'), await backend.integrations.create('assistant-relay')];
  if ('refused' in live || 'refused' in revoked) throw new Error('refused');
  // A status change is logged at most once per status interval (6e.20): each comes a heartbeat apart.
  for (const status of ['ready', 'busy', 'ready'] as const) {
    await backend.integrations.heartbeat(live.integration_id, heartbeatOf({ status }));
    clock.increment(30_000);
  }
  await backend.integrations.rotate(live.integration_id, 'client');
  await backend.integrations.heartbeat(revoked.integration_id, heartbeatOf());
  const job_id = randomUUID();
  await backend.createJob(revoked.integration_id, { job_id, purpose: 'capability_probe', payload: {}, byo: false, deadline_ms: 60_000 });
  await backend.cancel(revoked.integration_id, job_id);
  await backend.integrations.revoke(revoked.integration_id);
  const started = await backend.pairings.start({ provider_kind: 'assistant-relay', schema_version: 1, envelope_version: 1 }, '127.0.0.1');
  if (typeof started !== 'object' || !('pairing' in started)) throw new Error('no pairing');
  const { pairing_id } = started.pairing.context;
  await backend.pairings.abort(pairing_id, 'client', 'changed my mind');
  const viewBefore = await backend.committedIntegration(live.integration_id);
  await first.stop({ remove: false });
  // Created, three heartbeats of news, a rotated token.
  expect(streamsOf(first.db).get(`integration:${live.integration_id}`)).toBe(5);

  const uncompactedDir = tempDir();
  cpSync(first.dir, uncompactedDir, { recursive: true });
  clock.increment(8 * DAY);
  const second = await serveBackend({ dir: first.dir, config });
  clock.increment(0);
  await until(() => readEvents(second.db).some((event) => event.type === 'backend.forgotten'), 'the retention pass');
  const viewAfter = await second.backend.committedIntegration(live.integration_id);
  expect(encodeState(viewAfter)).toEqual(encodeState(viewBefore));
  expect(second.backend.integrations.authenticates(live.integration_id, 'relay', live.relay_token)).toBe(true);
  expect(second.backend.integrations.integration(revoked.integration_id)).toBeUndefined();
  expect(second.backend.pairings.pairing(pairing_id)).toBeUndefined();
  await second.stop({ remove: false });

  const streams = streamsOf(first.db);
  expect(streams.get(`integration:${live.integration_id}`)).toBe(1);
  for (const gone of [`integration:${revoked.integration_id}`, `job:${job_id}`, `pairing:${pairing_id}`])
    expect(streams.has(gone)).toBe(false);
  // Each partition forgets on its own: the service's its pairing, each integration its own jobs, itself, or its older events.
  const forgettings = readEvents(first.db).filter((event) => event.type === 'backend.forgotten');
  expect(forgettings).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ pairing_ids: [pairing_id], integration_ids: [] }),
      expect.objectContaining({ integration_id: revoked.integration_id, job_ids: [job_id], integration_ids: [revoked.integration_id] }),
      expect.objectContaining({ integration_id: live.integration_id, compacted_ids: [live.integration_id] }),
    ]),
  );
  expect(
    forgettings.every((event) => !('integration_id' in event) || (event as unknown as { pairing_ids: unknown[] }).pairing_ids.length === 0),
  ).toBe(true);

  // The same forgetting appended to the log as it was before: the same fold.
  const uncompactedDb = join(uncompactedDir, 'backend.db');
  const log = EventLog.open<BackendEvent>({ path: uncompactedDb, streamOf: backendStreamOf });
  for (const event of eventsAfter(first.db, log.lastPosition)) await log.append(event as unknown as BackendEvent);
  await log.close();
  expect(readEvents(uncompactedDb).length).toBeGreaterThan(readEvents(first.db).length);
  expect(backendFoldOf(first.db)).toBe(backendFoldOf(uncompactedDb));
  await verifyLogFile(first.db);
});

it('a backend keeps the forgetting events of the last day and the newest: an older one goes, with what it named', async () => {
  const clock = new SimulatedClock();
  const served = await serveBackend({ config: { clock, retentionMs: 7 * DAY } });
  clock.increment(0);
  const integration = await served.backend.integrations.create('assistant-relay');
  if ('refused' in integration) throw new Error(integration.refused.message);
  const settle = async () => {
    const job_id = randomUUID();
    await served.backend.createJob(integration.integration_id, {
      job_id,
      purpose: 'capability_probe',
      payload: {},
      byo: false,
      deadline_ms: 60_000,
    });
    await served.backend.cancel(integration.integration_id, job_id);
    return job_id;
  };
  const forgettings = () => readEvents(served.db).filter((event) => event.type === 'backend.forgotten');
  /** Eight days on (one pass on the way, which arms the next), then an hour at a time until `done`. */
  const passUntil = async (done: () => boolean) => {
    clock.increment(8 * DAY);
    await aMoment();
    for (let hour = 0; !done(); hour += 1) {
      if (hour > 3) throw new Error('no pass did it');
      clock.increment(RETENTION_CHECK_MS);
      await aMoment();
    }
  };
  const first = await settle();
  await passUntil(() => forgettings().length === 1);
  const second = await settle();
  await passUntil(() => forgettings().some((event) => (event.job_ids as string[]).includes(second)));
  // Both passes were more than a day apart: the first one's event went once the second's stood for it.
  expect(forgettings()).toHaveLength(1);
  expect(JSON.stringify(readEvents(served.db))).not.toContain(first);
  await served.stop();
});
