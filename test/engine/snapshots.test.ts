/**
 * Snapshots of the fold (issue 12, item 2): taken every N committed events and at a clean close; a start
 * folds the newest good one plus the events after it, and ends where a whole fold ends; a snapshot that
 * does not match its events, or was folded under other limits, is passed over with a report, never trusted.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { chatSnapshotCodec } from '../../engine/chat/chat-snapshot.js';
import { DEFAULT_SESSION_LIMITS } from '../../engine/chat/config.js';
import { ChatProjection } from '../../engine/chat/projection.js';
import { encodeInParts, encodeState } from '../../engine/core/state-codec.js';
import { SnapshotWriter } from '../../engine/core/snapshots.js';
import { EventLog } from '../../storage/event-log.js';
import { SimulatedClock } from '../support/clock.js';
import type { DomainEvent } from '../../machines/chat/events.js';
import { join } from 'node:path';
import { backendSnapshotCodec } from '../../engine/reasoning/snapshot.js';
import { BackendProjection } from '../../engine/reasoning/projection.js';
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import { builtinReasoner, startPlugin } from '../../index.js';
import { readEvents } from '../support/host.js';
import { Relay, stopAll } from '../http/fixture.js';
import { probeAnalyseSummarise, serveBackend } from '../support/backend.js';

afterEach(stopAll);

const encoded = (projection: ChatProjection) => JSON.stringify(encodeState(projection.state()));

function snapshotsOf(db: string): Array<{ position: number; data: string }> {
  const conn = new Database(db, { readonly: true });
  try {
    return conn.prepare('SELECT position, data FROM snapshots ORDER BY position DESC').all() as Array<{ position: number; data: string }>;
  } finally {
    conn.close();
  }
}

/** Changes a stored snapshot in place, as a disk or a person might. */
function tamper(db: string, position: number, change: (data: string) => string): void {
  const conn = new Database(db);
  try {
    const { data } = conn.prepare('SELECT data FROM snapshots WHERE position = ?').get(position) as { data: string };
    conn.prepare('UPDATE snapshots SET data = ? WHERE position = ?').run(change(data), position);
  } finally {
    conn.close();
  }
}

/** A Form A session with replies retained and one task left pending, and a Form B conversation with callback deliveries. */
async function workload(relay: Relay): Promise<void> {
  for (let i = 1; i <= 6; i++) await relay.turn('s', `t${i}`, { typing: 'working' }, { message: `answer ${i}` });
  await relay.post({ session_id: 's', task_id: 'pending', text: JSON.stringify({ script: [{ sleep: 60_000 }] }) });
}

/** Every error the host reports, as `what: message`, through a real pino logger. */
async function reportingLogger() {
  const { pino } = await import('pino');
  const lines: string[] = [];
  const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(line) });
  const reports = () =>
    lines
      .map((line) => JSON.parse(line) as { msg: string; err?: { message: string } })
      .map(({ msg, err }) => `${msg}: ${err?.message ?? ''}`);
  return { logger, reports };
}

describe('when snapshots are taken', () => {
  it('every N events; after a large snapshot, once the events since outnumber its bytes over 64', async () => {
    const log = EventLog.open<{ type: string; at: number }>({ path: ':memory:', streamOf: () => '' });
    let size = 10;
    const codec = { capture: () => undefined, encode: () => ['x'.repeat(size)], decode: () => undefined };
    new SnapshotWriter(log, codec, { clock: new SimulatedClock(0), everyEvents: 10, failed: (error) => expect.fail(String(error)) });
    const append = async (count: number) => {
      for (let i = 0; i < count; i++) await log.append({ type: 'e', at: 0 });
      await new Promise((resolve) => setImmediate(resolve));
    };
    const positions = () => log.snapshots().map((snapshot) => snapshot.position);
    await append(10);
    expect(positions()).toEqual([10]);
    size = 64 * 30;
    await append(10);
    expect(positions()).toEqual([20, 10]);
    // That one was 1,920 bytes: the next waits for 30 events.
    await append(29);
    expect(positions()).toEqual([20, 10]);
    await append(1);
    expect(positions()).toEqual([50, 20]);
    await log.close();
  });
});

describe('the snapshot text', () => {
  it('written in parts, is the text of the whole state encoded at once', () => {
    const maps = {
      sessions: new Map<string, unknown>([
        ['b', { z: 1, a: [1, 2], m: new Map([['k', new Set(['x'])]]) }],
        ['a', { undefinedLeftOut: undefined, n: null }],
      ]),
      empty: new Map(),
    };
    const head = { format: 1, kind: 'host', limits: DEFAULT_SESSION_LIMITS };
    expect([...encodeInParts(head, maps)].join('')).toBe(JSON.stringify({ ...head, state: encodeState(maps) }));
    expect([...encodeInParts({}, {})].join('')).toBe(JSON.stringify({ state: encodeState({}) }));
  });
});

describe('snapshots of the fold', () => {
  it('a start from any stored snapshot ends where folding the whole log ends, and the restarted host serves alike', async () => {
    const relay = await Relay.start({ snapshotEveryEvents: 5 });
    await workload(relay);
    const before = relay.taskSession('s');
    const dir = await relay.closeKeepingLog();
    const db = join(dir, 'relay.db');

    const events = readEvents(db) as unknown as DomainEvent[];
    const snapshots = snapshotsOf(db);
    expect(snapshots).toHaveLength(2);
    // The clean close took the newest, after the last event.
    expect(snapshots[0]!.position).toBe(events.length);
    const whole = new ChatProjection(DEFAULT_SESSION_LIMITS);
    for (const event of events) whole.apply(event);
    for (const snapshot of snapshots) {
      const resumed = new ChatProjection(DEFAULT_SESSION_LIMITS);
      resumed.restore(chatSnapshotCodec(resumed, DEFAULT_SESSION_LIMITS).decode(snapshot.data));
      for (const event of events.slice(snapshot.position)) resumed.apply(event);
      expect(encoded(resumed)).toBe(encoded(whole));
    }

    const { logger, reports } = await reportingLogger();
    const again = await Relay.start({ dir, logger });
    const after = again.taskSession('s');
    // The same session: its replies and ids, and the task the close cut off settled `interrupted` after them.
    expect(after.backlog.slice(0, -1)).toEqual(before.backlog);
    expect(after.pending_task_ids).toEqual([]);
    expect(reports()).toEqual([]);
  });

  it('passes over a snapshot whose text was changed, and every one folded under other limits, saying so', async () => {
    const relay = await Relay.start({ snapshotEveryEvents: 5 });
    await workload(relay);
    const dir = await relay.closeKeepingLog();
    const db = join(dir, 'relay.db');
    const [newest] = snapshotsOf(db);
    tamper(db, newest!.position, (data) => data.replace('answer 6', 'answer 7'));

    const first = await reportingLogger();
    const again = await Relay.start({ dir, logger: first.logger });
    expect(first.reports()).toEqual([`using the snapshot at position ${newest!.position} failed: its text is not what was written`]);
    expect(again.taskSession('s').backlog).toHaveLength(7);
    await again.closeKeepingLog();

    // Other limits: the snapshot the clean close just took is passed over too (the changed one still is), and the whole log folded.
    const [taken] = snapshotsOf(db);
    const second = await reportingLogger();
    const limited = await Relay.start({ dir, logger: second.logger, limits: { maxReplies: 100 } });
    expect(second.reports()).toEqual([
      `using the snapshot at position ${taken!.position} failed: it was folded under other session limits`,
      `using the snapshot at position ${newest!.position} failed: its text is not what was written`,
    ]);
    expect(limited.taskSession('s').backlog).toHaveLength(7);
  });
});

describe('snapshots of the backend', () => {
  it('a backend starts from its snapshot with the jobs and integrations a whole fold gives', async () => {
    const served = await serveBackend({ config: { snapshotEveryEvents: 3 } });
    const integration = await served.backend.integrations.create('assistant-relay');
    if ('refused' in integration) throw new Error(integration.refused.message);
    const plugin = await startPlugin({
      backendUrl: served.url,
      integrationId: integration.integration_id,
      relayToken: integration.relay_token,
      reasoner: builtinReasoner({ providerKind: 'assistant-relay' }),
      db: join(served.dir, 'plugin.db'),
      providerKind: 'assistant-relay',
    });
    await probeAnalyseSummarise(`${served.url}/api/v1/assistant/integrations/${integration.integration_id}`, integration.client_token);
    await plugin.stop();
    await served.stop({ remove: false });

    const events = readEvents(served.db) as unknown as BackendEvent[];
    const snapshots = snapshotsOf(served.db);
    expect(snapshots[0]!.position).toBe(events.length);
    const whole = new BackendProjection();
    for (const event of events) whole.apply(event);
    const resumed = new BackendProjection();
    resumed.restore(backendSnapshotCodec(resumed).decode(snapshots[1]!.data));
    for (const event of events.slice(snapshots[1]!.position)) resumed.apply(event);
    expect(JSON.stringify(encodeState(resumed.state()))).toBe(JSON.stringify(encodeState(whole.state())));

    const again = await serveBackend({ dir: served.dir });
    const jobs = [...whole.state().jobs.values()].map((job) => job.context);
    expect(jobs).toHaveLength(3);
    for (const { integration_id, job_id } of jobs)
      expect((await again.backend.committedJob(integration_id, job_id))?.value).toEqual(whole.job(integration_id, job_id)!.value);
    expect((await again.backend.committedIntegration(integration.integration_id))?.integration.value).toEqual(
      whole.integration(integration.integration_id)!.value,
    );
    await again.stop();
  });
});
