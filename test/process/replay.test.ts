/**
 * `assistant-relay replay` on real logs: a host's (a Form A turn, a task cut off by a restart, a Form B
 * conversation delivered to a callback receiver) while that host still runs, a backend relay's (jobs
 * created and completed through a plugin), and copies of them damaged on purpose.
 */
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinReasoner, startPlugin, type Plugin } from '../../index.js';
import { backendStreamOf, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { EventLog } from '../../storage/event-log.js';
import { serveBackend, probeAnalyseSummarise, type ServedBackend } from '../support/backend.js';
import { integrationCreated, jobCreated } from '../support/backend-events.js';
import { writeOlderBackendLog } from '../support/older-backend-log.js';
import { runCli, useChildFolder } from '../support/child.js';
import { TOKEN, countEvents, readEvents, startHost, tempDir, type TestHost } from '../support/host.js';
import { post, script } from '../support/http.js';
import { Receiver, closeReceivers } from '../support/receiver.js';
import { eventually } from '../support/wait.js';

const folder = useChildFolder();

type Logged = ReturnType<typeof readEvents>[number];
interface Line {
  readonly kind: string;
  readonly id: string | number;
  readonly session_id?: string;
  readonly integration_id?: string;
  readonly position?: number;
  readonly at?: string;
  readonly event?: string;
  readonly state?: string;
  readonly final?: string;
  readonly status?: string;
  readonly cause?: string;
}

const jsonLines = (stdout: string): Line[] =>
  stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Line);
const positionOf = (events: Logged[], found: (event: Logged) => boolean) => events.findIndex(found) + 1;

/** Waits until the log at `db` holds an event `found` accepts. */
async function logged(db: string, what: string, found: (event: Logged) => boolean): Promise<void> {
  await eventually(
    what,
    () => readEvents(db),
    (events) => events.some(found),
  );
}

/** A copy of a live log, taken by SQLite itself from a read-only connection (as a backup tool would). */
function copyOf(db: string, to: string): string {
  const source = new Database(db, { readonly: true });
  source.prepare('VACUUM INTO ?').run(to);
  source.close();
  return to;
}

/** Rewrites one event of a copy, past the log's append-only trigger, as a damaged disk or a bad hand would. */
function damage(db: string, position: number, type: string, data: string): void {
  const conn = new Database(db);
  conn.exec('DROP TRIGGER events_append_only_update');
  conn.prepare('UPDATE events SET type = ?, data = ? WHERE position = ?').run(type, data, position);
  conn.close();
}

describe('replay of a host log', () => {
  const dir = tempDir();
  const db = join(dir, 'relay.db');
  let host: TestHost;
  let conversation: string;

  beforeAll(async () => {
    const receiver = await Receiver.start();
    const first = await startHost({ dir, db });
    expect(
      (await post(first.url, TOKEN, { session_id: 'chat-a', task_id: 'a1', text: script({ typing: 'thinking' }, { message: 'hello' }) }))
        .status,
    ).toBe(202);
    expect((await post(first.url, TOKEN, { session_id: 'chat-a', task_id: 'a2', text: script({ sleep: 60_000 }) })).status).toBe(202);
    await logged(db, 'a1 settled', (event) => event.type === 'task.settled' && event.task_id === 'a1');
    await first.close();
    // The restart settles a2, cut off mid-run, as interrupted; new sessions are conversations (Form B).
    host = await startHost({ dir, db, form: 'B' });
    conversation = randomUUID();
    const callback = { url: `${receiver.url}/cb`, token: 'callback-token' };
    expect(
      (
        await post(host.url, TOKEN, {
          session_id: 'conv-b',
          task_id: conversation,
          text: script({ message: 'one' }, { message: 'two' }),
          callback,
        })
      ).status,
    ).toBe(202);
    await logged(db, 'both replies delivered', (event) => event.type === 'delivery.succeeded' && event.n === 2);
  });

  afterAll(async () => {
    await host.close();
    await closeReceivers();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints a block per session, in the order they opened: each event with its time and the state it moved to, then the final states', async () => {
    const result = await runCli(['replay', '--db', db]);
    expect([result.code, result.stderr]).toEqual([0, '']);
    const text = result.stdout;
    expect(text).toMatch(new RegExp(`^host log ${db}: \\d+ events through #\\d+\\n`));
    expect(text.indexOf('session chat-a (Form A)')).toBeGreaterThan(0);
    expect(text.indexOf('conversation conv-b (Form B)')).toBeGreaterThan(text.indexOf('session chat-a (Form A)'));
    // Each event with its words: the user's text and the reply in quotes, cut to fit the line.
    expect(text).toMatch(
      /\n {2}#\d+ +\d{4}-\d\d-\d\dT[\d:.]+Z {2}task\.started +task a1 pending {2}“\{"script":\[\{"typing":"thinking"\},\{"message":"hello"\}\]\}”\n/,
    );
    expect(text).toMatch(/ {2}task\.settled +task a1 settled \(message\) {2}“hello”\n/);
    expect(text).toMatch(/ {2}task\.settled +task a2 settled \(errored, interrupted\) {2}interrupted: [^\n]+\n/);
    expect(text).toMatch(/ {2}reply\.queued +delivery 2 waiting {2}“two”\n/);
    expect(text).toMatch(/ {2}delivery\.succeeded +delivery 1 succeeded\n/);
    expect(text).toContain('  final:\n    conversation conv-b (Form B): open\n    delivery 1: succeeded\n    delivery 2: succeeded\n');
  });

  it('--json: a line per timeline entry, in log order, then a line per entity with its final state', async () => {
    const events = readEvents(db);
    const result = await runCli(['replay', '--db', db, '--json']);
    expect([result.code, result.stderr]).toEqual([0, '']);
    const lines = jsonLines(result.stdout);
    const entries = lines.filter((line) => line.final === undefined);
    const positions = entries.map((line) => line.position!);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    const settled = positionOf(events, (event) => event.type === 'task.settled' && event.task_id === 'a1');
    expect(entries).toContainEqual({
      kind: 'task',
      id: 'a1',
      session_id: 'chat-a',
      position: settled,
      at: new Date(events[settled - 1]!.at as number).toISOString(),
      event: 'task.settled',
      state: 'settled',
      status: 'message',
      says: '“hello”',
    });
    const finals = lines.slice(entries.length);
    expect(finals.every((line) => line.final !== undefined)).toBe(true);
    expect(finals).toEqual([
      { kind: 'session', id: 'chat-a', form: 'A', final: 'open' },
      { kind: 'task', id: 'a1', session_id: 'chat-a', final: 'settled', status: 'message' },
      { kind: 'task', id: 'a2', session_id: 'chat-a', final: 'settled', status: 'errored', cause: 'interrupted' },
      { kind: 'session', id: 'conv-b', form: 'B', final: 'open' },
      { kind: 'delivery', id: 1, session_id: 'conv-b', final: 'succeeded' },
      { kind: 'delivery', id: 2, session_id: 'conv-b', final: 'succeeded' },
    ]);
  });

  it('--session: only that session, its tasks and its deliveries', async () => {
    const result = await runCli(['replay', '--db', db, '--session', 'conv-b', '--json']);
    expect(result.code).toBe(0);
    const lines = jsonLines(result.stdout);
    expect(lines.length).toBeGreaterThan(5);
    expect(lines.every((line) => (line.session_id ?? line.id) === 'conv-b')).toBe(true);
    const text = await runCli(['replay', '--db', db, '--session', 'chat-a']);
    expect(text.stdout).toContain('session chat-a (Form A)');
    expect(text.stdout).not.toContain('conv-b');
    // The start of a session's id names it when no other starts so; an exact id wins over a longer one it starts.
    const started = await runCli(['replay', '--db', db, '--session', 'conv', '--json']);
    expect(jsonLines(started.stdout).every((line) => (line.session_id ?? line.id) === 'conv-b')).toBe(true);
    const shared = await runCli(['replay', '--db', db, '--session', 'c']);
    const named = /^assistant-relay: --session c is the start of 2 ids \(chat-a, conv-b\): give more of it\nusage:/;
    expect([shared.code, shared.stderr]).toEqual([2, expect.stringMatching(named)]);
    const missing = await runCli(['replay', '--db', db, '--session', 'nobody']);
    expect([missing.code, missing.stderr]).toEqual([
      1,
      expect.stringMatching(/^assistant-relay replay: .* has no session nobody through event #\d+\n$/),
    ]);
  });

  it('--until: stops after that position, so a task is seen as it was just before it settled', async () => {
    const events = readEvents(db);
    const settled = positionOf(events, (event) => event.type === 'task.settled' && event.task_id === 'a1');
    const result = await runCli(['replay', '--db', db, '--until', String(settled - 1), '--json']);
    expect(result.code).toBe(0);
    const lines = jsonLines(result.stdout);
    expect(Math.max(...lines.map((line) => line.position ?? 0))).toBe(settled - 1);
    expect(lines).toContainEqual({ kind: 'task', id: 'a1', session_id: 'chat-a', final: 'pending' });
    expect(lines.some((line) => line.id === 'conv-b')).toBe(false);
    const text = await runCli(['replay', '--db', db, '--until', String(settled)]);
    expect(text.stdout).toMatch(new RegExp(`^host log .*: ${settled} events through #${settled}\\n`));
  });

  it('--at: stops after the last event at or before that time (ISO 8601 or epoch ms)', async () => {
    const events = readEvents(db);
    const at = events.find((event) => event.type === 'session.opened' && event.session_id === 'chat-a')!.at as number;
    const through = events.findIndex((event) => (event.at as number) > at);
    const [iso, ms] = await Promise.all(
      [new Date(at).toISOString(), String(at)].map((flag) => runCli(['replay', '--db', db, '--at', flag, '--json'])),
    );
    expect([iso!.code, ms!.code, ms!.stdout]).toEqual([0, 0, iso!.stdout]);
    const lines = jsonLines(iso!.stdout);
    expect(Math.max(...lines.map((line) => line.position ?? 0))).toBe(through);
    expect(lines.every((line) => line.at === undefined || line.at <= new Date(at).toISOString())).toBe(true);
    expect(lines).toContainEqual({ kind: 'session', id: 'chat-a', form: 'A', final: 'open' });
    // The conversation opened long after, once the host had restarted.
    expect(lines.some((line) => line.id === 'conv-b')).toBe(false);
  });

  it('--verify: folds the log twice, compares after every event, and finds no difference', async () => {
    const result = await runCli(['replay', '--db', db, '--verify']);
    expect([result.code, result.stdout, result.stderr]).toEqual([0, `verified: ${countEvents(db)} events, 0 differences\n`, '']);
  });

  it('reads the log while its host goes on appending to it', async () => {
    const before = countEvents(db);
    const replaying = Promise.all([runCli(['replay', '--db', db, '--json']), runCli(['replay', '--db', db, '--verify'])]);
    const posts = await Promise.all(
      [1, 2, 3].map((i) => post(host.url, TOKEN, { session_id: 'conv-b', task_id: randomUUID(), text: script({ message: `more ${i}` }) })),
    );
    expect(posts.map((answer) => answer.status)).toEqual([202, 202, 202]);
    const [json, verified] = await replaying;
    expect([json.code, verified.code]).toEqual([0, 0]);
    await logged(db, 'the new replies delivered', (event) => event.type === 'delivery.succeeded' && event.n === 5);
    const after = await runCli(['replay', '--db', db, '--verify']);
    expect(countEvents(db)).toBeGreaterThan(before);
    expect(after.stdout).toBe(`verified: ${countEvents(db)} events, 0 differences\n`);
  });

  it('names the position of an event that is not JSON, or of a type no host logs, and exits 1', async () => {
    const events = readEvents(db);
    const settled = positionOf(events, (event) => event.type === 'task.settled' && event.task_id === 'a1');
    const broken = copyOf(db, join(folder(), 'broken.db'));
    expect((await runCli(['replay', '--db', broken, '--verify'])).code).toBe(0);
    damage(broken, settled, 'task.settled', '{"type": "task.settled", "at": ');
    for (const args of [[], ['--verify'], ['--json']]) {
      const result = await runCli(['replay', '--db', broken, ...args]);
      expect([result.code, result.stderr]).toEqual([
        1,
        expect.stringMatching(new RegExp(`^assistant-relay replay: event #${settled} \\(task\\.settled\\) is not JSON`)),
      ]);
    }
    const unknown = copyOf(db, join(folder(), 'unknown.db'));
    damage(unknown, settled, 'task.exploded', JSON.stringify({ ...events[settled - 1], type: 'task.exploded' }));
    for (const args of [[], ['--verify']]) {
      const result = await runCli(['replay', '--db', unknown, ...args]);
      expect([result.code, result.stderr]).toEqual([
        1,
        `assistant-relay replay: event #${settled} (task.exploded) is not an event of a host log\n`,
      ]);
    }
  });
  it('--verify checks the fold against every snapshot the host stored, and names where an event changed under one parts from it', async () => {
    const events = readEvents(db);
    const settled = positionOf(events, (event) => event.type === 'task.settled' && event.task_id === 'a1');
    const changed = copyOf(db, join(folder(), 'changed.db'));
    // The first host's clean close stored a snapshot after a1 settled: a reply changed afterwards no longer folds to it.
    const conn = new Database(changed, { readonly: true });
    const snapshot = (conn.prepare('SELECT min(position) AS p FROM snapshots').get() as { p: number }).p;
    conn.close();
    expect(snapshot).toBeGreaterThan(settled);
    const original = events[settled - 1]!;
    damage(changed, settled, 'task.settled', JSON.stringify({ ...original, data: String(original.data).replace('hello', 'HELLO') }));
    const result = await runCli(['replay', '--db', changed, '--verify']);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      new RegExp(`after event #${snapshot} \\([a-z.]+\\), the snapshot stored at #${snapshot} differs from the fold: sessions › chat-a › `),
    );
  });
});

describe('replay of a backend log', () => {
  const dir = tempDir();
  let backend: ServedBackend;
  let plugin: Plugin;
  let integrationId: string;

  beforeAll(async () => {
    backend = await serveBackend({ dir });
    const integration = await backend.backend.integrations.create('assistant-relay');
    if ('refused' in integration) throw new Error(integration.refused.message);
    integrationId = integration.integration_id;
    plugin = await startPlugin({
      backendUrl: backend.url,
      integrationId: integration.integration_id,
      relayToken: integration.relay_token,
      reasoner: builtinReasoner({ providerKind: 'assistant-relay' }),
      db: join(dir, 'plugin.db'),
      providerKind: 'assistant-relay',
    });
    await probeAnalyseSummarise(`${backend.url}/api/v1/assistant/integrations/${integration.integration_id}`, integration.client_token);
  });

  afterAll(async () => {
    await plugin.stop();
    await backend.stop();
  });

  it('prints each job created and completed, and its integration, and verifies', async () => {
    const jobs = readEvents(backend.db)
      .filter((event) => event.type === 'job.created')
      .map((event) => event.job_id as string);
    expect(jobs).toHaveLength(3);
    const result = await runCli(['replay', '--db', backend.db]);
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(result.stdout).toMatch(/^backend log .*\n\nbackend\n {2}#1 .* backend\.started\n/);
    for (const job of jobs) expect(result.stdout).toContain(`job ${job} (integration ${integrationId})\n`);
    // A job's purpose, then a short result; a finished job's state once.
    for (const purpose of ['capability_probe', 'live_analysis', 'session_summary']) {
      expect(result.stdout).toMatch(new RegExp(` {2}job\\.created +open\\.created {2}${purpose}\n`));
    }
    expect(result.stdout).toMatch(/ {2}job\.completed +completed {2}result \{"[^\n]+\n/);
    expect(result.stdout).not.toContain('completed (completed)');
    expect(result.stdout).toMatch(/ {2}integration\.seen +active\.online\n/);
    const verified = await runCli(['replay', '--db', backend.db, '--verify']);
    expect(verified.stdout).toBe(`verified: ${countEvents(backend.db)} events, 0 differences\n`);
  });

  it('--job: only that job, with its job state, named by its id or its start', async () => {
    const job = readEvents(backend.db).find((event) => event.type === 'job.created')!.job_id as string;
    const result = await runCli(['replay', '--db', backend.db, '--job', job, '--json']);
    expect(result.code).toBe(0);
    expect((await runCli(['replay', '--db', backend.db, '--job', job.slice(0, 8), '--json'])).stdout).toBe(result.stdout);
    const lines = jsonLines(result.stdout);
    expect(lines.every((line) => line.kind === 'job' && line.id === job && line.integration_id === integrationId)).toBe(true);
    const states = lines.map((line) => line.state ?? line.final);
    expect([states[0], ...states.slice(-2)]).toEqual(['open.created', 'completed', 'completed']);
    expect(lines.at(-1)).toEqual({ kind: 'job', id: job, integration_id: integrationId, final: 'completed', status: 'completed' });
  });

  it("prints each job of the plugin's own log, received to closed, and verifies it", async () => {
    const pluginDb = join(dir, 'plugin.db');
    const jobs = readEvents(backend.db)
      .filter((event) => event.type === 'job.created')
      .map((event) => event.job_id as string);
    await eventually(
      'the plugin closes every job',
      () => readEvents(pluginDb).filter((event) => event.type === 'plugin.job_closed').length,
      (closed) => closed === jobs.length,
    );
    const result = await runCli(['replay', '--db', pluginDb]);
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(result.stdout).toMatch(/^plugin log .*\n\n/);
    for (const job of jobs) {
      // Each line ends with the event's words: the job's purpose when received, its result when finished.
      expect(result.stdout).toMatch(
        new RegExp(
          `\\nplugin-job ${job}\\n.*plugin\\.job_received +open\\.received  [a-z_]+\\n.*plugin\\.job_started +open\\.started\\n` +
            `.*plugin\\.job_finished +open\\.finished  result \\{.*\\n.*plugin\\.job_closed +closed \\(posted\\)\\n`,
        ),
      );
    }
    const one = jsonLines((await runCli(['replay', '--db', pluginDb, '--job', jobs[0]!, '--json'])).stdout);
    expect(one.map((line) => line.state ?? line.final)).toEqual(['open.received', 'open.started', 'open.finished', 'closed', 'closed']);
    expect(one.at(-1)).toEqual({ kind: 'plugin-job', id: jobs[0], final: 'closed', status: 'posted' });
    const verified = await runCli(['replay', '--db', pluginDb, '--verify']);
    expect(verified.stdout).toBe(`verified: ${countEvents(pluginDb)} events, 0 differences\n`);
  });

  it('refuses a host flag on a backend log or a plugin log as a usage error', async () => {
    for (const db of [backend.db, join(dir, 'plugin.db')]) {
      const session = await runCli(['replay', '--db', db, '--session', 's']);
      expect([session.code, session.stderr]).toEqual([
        2,
        expect.stringMatching(/^assistant-relay: --session names a session of a host's log; .* is a (backend|plugin)'s/),
      ]);
    }
  });
});

describe("replay of a backend log from before job ids were each integration's", () => {
  it("folds a job whose events span its older stream and its new one as one, and --job shows every integration's job of that id", async () => {
    const db = join(folder(), 'older.db');
    const [c, d, x, z] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const [integration, created] = [(id: string) => integrationCreated(id, 2), jobCreated];
    await writeOlderBackendLog(db, [
      { type: 'backend.started', epoch: 'older', at: 1 },
      integration(c),
      integration(d),
      created(c, x, 3),
      { type: 'job.cancelled', job_id: x, integration_id: c, at: 4 },
      created(c, z, 5),
    ]);
    // The upgraded backend goes on: C's open job Z expires in its new stream, and D takes the id X.
    const log = EventLog.open<BackendEvent>({ path: db, streamOf: backendStreamOf });
    for (const event of [
      { type: 'backend.started', epoch: 'newer', at: 6 },
      { type: 'job.expired', job_id: z, integration_id: c, at: 60_005 },
      created(d, x, 60_006),
    ] satisfies BackendEvent[])
      void log.append(event);
    await log.close();

    const text = await runCli(['replay', '--db', db]);
    expect([text.code, text.stderr]).toEqual([0, '']);
    expect(text.stdout).toMatch(
      new RegExp(`\\njob ${z} \\(integration ${c}\\)\\n.*job\\.created +open\\.created  \\w+\\n.*job\\.expired +expired\\n`),
    );
    const json = jsonLines((await runCli(['replay', '--db', db, '--job', x, '--json'])).stdout);
    expect(json.filter((line) => line.final !== undefined)).toEqual([
      { kind: 'job', id: x, integration_id: c, final: 'cancelled', status: 'cancelled' },
      { kind: 'job', id: x, integration_id: d, final: 'open.created', status: 'created' },
    ]);
    expect((await runCli(['replay', '--db', db, '--verify'])).stdout).toBe('verified: 9 events, 0 differences\n');
  });
});

describe('replay: what it refuses', () => {
  it.each([
    [[], '--db is required'],
    [['--db', 'x.db', '--session', 's', '--job', 'j'], '--session and --job: give one (a host log has sessions, a backend log jobs)'],
    [['--db', 'x.db', '--until', '3', '--at', '0'], '--until and --at both say where to stop: give one'],
    [['--db', 'x.db', '--until', 'three'], '--until must be a whole number, not "three"'],
    [['--db', 'x.db', '--at', 'yesterday'], '--at must be an ISO 8601 time (2025-06-01T12:00:00Z) or epoch milliseconds, not "yesterday"'],
    [['--db', 'x.db', '--verify', '--json'], '--verify folds the whole log and prints one line: leave out --json'],
    [['--db', 'x.db', '--session', ''], '--session must name one'],
  ])('%j: %s (exit 2)', async (args, message) => {
    const result = await runCli(['replay', ...args]);
    expect([result.code, result.stdout, result.stderr]).toEqual([
      2,
      '',
      expect.stringContaining(`assistant-relay: ${message}\nusage: assistant-relay replay`),
    ]);
  });

  it('a missing file, a folder and a file that is not a log are usage errors that say so', async () => {
    const dir = folder();
    const other = new Database(join(dir, 'not-ours.db'));
    other.exec('CREATE TABLE events (x)');
    other.close();
    for (const [db, says] of [
      [join(dir, 'missing.db'), 'is not a file'],
      [dir, 'is not a file'],
      [join(dir, 'not-ours.db'), 'is not an assistant-relay event log'],
    ] as const) {
      const result = await runCli(['replay', '--db', db]);
      expect([result.code, result.stderr]).toEqual([2, expect.stringContaining(`assistant-relay: --db: ${db} ${says}`)]);
    }
  });
});
