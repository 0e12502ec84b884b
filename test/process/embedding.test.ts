/**
 * The embedding API (`createAssistantHost` from the package entry point), as a host process uses it: a
 * custom agent, engine events, ending sessions, reading session state, closing; over real HTTP and a
 * real SQLite file.
 */
import Database from 'better-sqlite3';
import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SchemaMismatchError, createAssistantHost, type Agent, type DomainEvent, type MemoryEntry, type Turn } from '../../index.js';
import { post, request, script } from '../support/http.js';
import { TOKEN, startHost, tempDir, type TestHost } from '../support/host.js';
import { readEvents } from '../support/log.js';
import { SseConnection } from '../support/sse.js';
import { captureWarnings } from '../support/warnings.js';

const hosts: TestHost[] = [];
const dirs: string[] = [];

async function start(options: Parameters<typeof startHost>[0] = {}): Promise<TestHost> {
  const t = await startHost(options);
  hosts.push(t);
  dirs.push(t.dir);
  return t;
}

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((t) => t.close()));
  for (const dir of new Set(dirs.splice(0))) rmSync(dir, { recursive: true, force: true });
});

/** An agent that remembers every turn it was given and answers `re: TEXT`. */
function recordingAgent(): Agent & { turns: Turn[] } {
  const turns: Turn[] = [];
  return {
    name: 'recording',
    turns,
    async respond(turn, reply) {
      turns.push(turn);
      await reply.typing('reading');
      await reply.message(`re: ${turn.text}`);
    },
  };
}

async function turn(t: TestHost, stream: SseConnection, body: Record<string, unknown>): Promise<void> {
  const before = stream.replies.length;
  expect((await post(t.url, TOKEN, body)).status).toBe(202);
  await stream.untilReplies(before + 1);
}

const entry = (role: MemoryEntry['role'], task_id: string, text: string) => ({ role, task_id, text, at: expect.any(Number) });

describe('createAssistantHost', () => {
  it('gives a custom agent each turn with the memory of earlier turns and the standing system_prelude, across a restart', async () => {
    const agent = recordingAgent();
    const t = await start({ agent });
    const stream = await SseConnection.open(`${t.url}/v1/events?session_id=m`, { token: TOKEN });
    await turn(t, stream, { session_id: 'm', task_id: 't1', text: 'hello', system_prelude: 'You are terse.' });
    await turn(t, stream, { session_id: 'm', task_id: 't2', text: 'again' });
    const other = await SseConnection.open(`${t.url}/v1/events?session_id=insights:call-1`, { token: TOKEN });
    await turn(t, other, { session_id: 'insights:call-1', task_id: 'i1', text: 'transcript', system_prelude: 'Coach.' });

    expect(agent.turns).toEqual([
      { session_id: 'm', task_id: 't1', text: 'hello', system_prelude: 'You are terse.', memory: [], insights: false },
      {
        session_id: 'm',
        task_id: 't2',
        text: 'again',
        system_prelude: 'You are terse.',
        memory: [entry('user', 't1', 'hello'), entry('assistant', 't1', 're: hello')],
        insights: false,
      },
      // Memory and prelude belong to one session.
      { session_id: 'insights:call-1', task_id: 'i1', text: 'transcript', system_prelude: 'Coach.', memory: [], insights: true },
    ]);
    stream.close();
    other.close();

    // Memory is folded from the log: a new host on the same file remembers.
    await t.close();
    const again = await start({ agent, dir: t.dir });
    const resumed = await SseConnection.open(`${again.url}/v1/events?session_id=m`, { token: TOKEN });
    await turn(again, resumed, { session_id: 'm', task_id: 't3', text: 'still there?' });
    expect(agent.turns.at(-1)).toEqual({
      session_id: 'm',
      task_id: 't3',
      text: 'still there?',
      system_prelude: 'You are terse.',
      memory: [
        entry('user', 't1', 'hello'),
        entry('assistant', 't1', 're: hello'),
        entry('user', 't2', 'again'),
        entry('assistant', 't2', 're: again'),
      ],
      insights: false,
    });
    resumed.close();
  });

  it('tells onEvent listeners about each event once it is committed, until they unsubscribe', async () => {
    const t = await start();
    const seen: Array<{ event: DomainEvent; logged: number }> = [];
    const unsubscribe = t.host.onEvent((event) => seen.push({ event, logged: readEvents(t.db).length }));
    const stream = await SseConnection.open(`${t.url}/v1/events?session_id=e`, { token: TOKEN });
    await turn(t, stream, { session_id: 'e', task_id: 't1', text: script({ tool_call: 'search' }, { message: 'found' }) });

    const log = readEvents(t.db);
    const first = log.length - seen.length;
    expect(seen.map((s) => s.event.type)).toEqual(['session.opened', 'task.started', 'task.progressed', 'task.settled']);
    seen.forEach(({ event, logged }, i) => {
      expect(log[first + i]).toMatchObject(event);
      // Durable before the listener heard of it.
      expect(logged).toBeGreaterThanOrEqual(first + i + 1);
    });

    unsubscribe();
    await turn(t, stream, { session_id: 'e', task_id: 't2', text: 'more' });
    expect(seen).toHaveLength(4);
    stream.close();
  });

  it('keeps serving when an onEvent listener throws, and hands listeners events without storage fields', async () => {
    const t = await start();
    const seen: DomainEvent[] = [];
    const warnings = captureWarnings();
    t.host.onEvent(() => {
      throw new Error('a broken listener');
    });
    t.host.onEvent((event) => seen.push(event));
    const stream = await SseConnection.open(`${t.url}/v1/events?session_id=l`, { token: TOKEN });
    await turn(t, stream, { session_id: 'l', task_id: 't1', text: 'still here?' });
    expect(stream.replies.map((r) => r.json.reply_text)).toEqual(['still here?']);
    expect(seen.map((e) => e.type)).toEqual(['session.opened', 'task.started', 'task.progressed', 'task.settled']);
    for (const event of seen) expect(event).not.toHaveProperty('stream');
    // Each failure is reported (a process warning, with no logger), never swallowed.
    expect(warnings).toEqual(seen.map(() => 'assistant-relay: onEvent listener failed: Error: a broken listener'));
    stream.close();
  });

  it('ends a session: its pending task settles, its streams close, later messages are ignored', async () => {
    const t = await start();
    const stream = await SseConnection.open(`${t.url}/v1/events?session_id=x`, { token: TOKEN });
    await post(t.url, TOKEN, {
      session_id: 'x',
      task_id: 't1',
      text: script({ typing: 'waiting' }, { sleep: 60_000 }, { message: 'never' }),
    });
    await stream.until((c) => c.frames.length >= 1, 5_000, 'typing');

    expect(await t.host.endSession('x')).toBe(true);
    await stream.untilEnded();
    expect(stream.replies.map((r) => r.json)).toEqual([
      { session_id: 'x', task_id: 't1', status: 'errored', error_code: 'session_ended', error_message: expect.any(String) },
    ]);
    expect(t.host.session('x')).toMatchObject({ state: 'ended', end_reason: 'host', pending_task_ids: [] });
    const later = await post(t.url, TOKEN, { session_id: 'x', task_id: 't2', text: 'hello?' });
    expect(later.status).toBe(200);
    expect(later.body).toEqual({ ok: true, ignored: true, reason: 'session_ended' });
    expect(await t.host.endSession('x')).toBe(false);
    expect(await t.host.endSession('never-seen')).toBe(false);
  });

  it('shows a session as the host knows it', async () => {
    const t = await start();
    expect(t.host.session('v')).toBeUndefined();
    const stream = await SseConnection.open(`${t.url}/v1/events?session_id=v`, { token: TOKEN });
    await turn(t, stream, { session_id: 'v', task_id: 't1', text: 'hi' });
    const id = stream.lastId!;
    const [epoch, generation] = id.split(':');
    expect(t.host.epoch).toBe(epoch);
    expect(((await request(`${t.url}/healthz`)).body as { epoch: string }).epoch).toBe(t.host.epoch);
    expect(t.host.sessionIds()).toEqual(['v']);
    expect(t.host.session('v')).toEqual({
      session_id: 'v',
      form: 'A',
      state: 'open',
      callbacks: { queued: 0, succeeded: 0, abandoned: 0 },
      generation,
      opened_at: expect.any(Number),
      last_activity_at: expect.any(Number),
      ended_at: null,
      end_reason: null,
      pending_task_ids: [],
      last_event_id: id,
      backlog: [{ id, task_id: 't1' }],
      backlog_bytes: Buffer.byteLength(stream.replies[0]!.data),
      evicted_task_ids: [],
      ledger_floor: 0,
      readers: 1,
      reader_states: [{ state: 'live.flowing', queued_bytes: 0, socket_buffered: 0 }],
    });
    // The inspection route serves the same view.
    expect((await request(`${t.url}/v1/sessions/v`, { token: TOKEN })).body).toEqual(t.host.session('v'));
    stream.close();
  });

  it('closes once however often close() is called: streams end, the port is released, the file is closed cleanly', async () => {
    const t = await start();
    const stream = await SseConnection.open(`${t.url}/v1/events?session_id=c`, { token: TOKEN });
    await turn(t, stream, { session_id: 'c', task_id: 't1', text: 'hi' });
    await Promise.all([t.host.close(), t.host.close()]);
    await t.host.close();
    await stream.untilEnded();
    await expect(fetch(`${t.url}/healthz`)).rejects.toThrow();
    expect(existsSync(`${t.db}-wal`) ? statSync(`${t.db}-wal`).size : 0).toBe(0);
    const reopened = await start({ dir: t.dir });
    expect(reopened.host.session('c')).toMatchObject({ state: 'open', backlog: [{ task_id: 't1' }] });
  });

  it('refuses an unknown built-in agent and a foreign database file', async () => {
    const dir = tempDir();
    dirs.push(dir);
    await expect(createAssistantHost({ db: join(dir, 'a.db'), token: TOKEN, agent: 'oracle' as never })).rejects.toThrow(TypeError);
    const foreign = join(dir, 'foreign.db');
    const db = new Database(foreign);
    db.exec('CREATE TABLE t (x)');
    db.close();
    await expect(createAssistantHost({ db: foreign, token: TOKEN, agent: 'echo' })).rejects.toThrow(SchemaMismatchError);
  });
});
