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
import { ChatProjection } from '../../src/engine/projection.js';
import { DEFAULT_LIMITS } from '../../src/engine/config.js';
import { RETENTION_CHECK_MS } from '../../src/engine/retention.js';
import { encodeState } from '../../src/engine/state-codec.js';
import { isHostEvent, streamOf, type DomainEvent } from '../../src/machines/events.js';
import { EventLog } from '../../src/storage/event-log.js';
import type { BackendEvent } from '../../src/machines/backend-events.js';
import { serveBackend } from '../support/backend.js';
import { SimulatedClock } from '../support/clock.js';
import { readEvents, tempDir } from '../support/host.js';
import { Relay, aMoment, stopAll, until } from '../http/fixture.js';

afterEach(stopAll);

const DAY = 24 * 60 * 60 * 1000;

/** The events of the log, and the fold of them from nothing (snapshots aside). */
function foldOf(db: string): { events: DomainEvent[]; state: string } {
  const events = readEvents(db) as unknown as DomainEvent[];
  const projection = new ChatProjection(DEFAULT_LIMITS);
  for (const event of events) projection.apply(event);
  return { events, state: JSON.stringify(encodeState(projection.state())) };
}

function eventsAfter(db: string, position: number): DomainEvent[] {
  const conn = new Database(db, { readonly: true });
  try {
    return (conn.prepare('SELECT data FROM events WHERE position > ? ORDER BY position').all(position) as Array<{ data: string }>).map((row) => JSON.parse(row.data));
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
  const [a, b] = [await Relay.start({ clock, dir, retentionMs: Infinity, sessionIdleTtlMs }), await Relay.start({ clock, dir: uncompactedDir, retentionMs: Infinity, sessionIdleTtlMs })];
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
    await served.backend.createJob(integration.integration_id, { job_id, purpose: 'capability_probe', payload: {}, byo: false, deadline_ms: 60_000 });
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
  expect(events.find((event) => event.type === 'backend.forgotten')).toMatchObject({ jobs: { [integration.integration_id]: expect.arrayContaining(jobIds) }, job_ids: expect.arrayContaining(jobIds), pairing_ids: [] });
  expect(events.length).toBeLessThan(before);
  await served.stop();
});
