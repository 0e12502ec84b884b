/** `POST /v1/incoming` (4.2, 3.1 rule 1) and how sessions end (host, agent, idleness). */
import { afterEach, describe, expect, it } from 'vitest';
import type { Agent } from '../../index.js';
import { REPLY_ERRORS } from '../../protocol/index.js';
import { request, script } from '../support/http.js';
import { readEvents } from '../support/log.js';
import { SimulatedClock } from '../support/clock.js';
import { Relay, TOKEN, aMoment, idOf, stopAll, until } from './fixture.js';

afterEach(stopAll);

const ignored = { ok: true, ignored: true, reason: 'session_ended' };
const sessionEnded = (session_id: string, task_id: string) => ({
  session_id,
  task_id,
  status: 'errored',
  error_code: 'session_ended',
  error_message: REPLY_ERRORS.session_ended,
});
const SLEEP_FOREVER = { sleep: 60_000 };
/** The documented default (README, `--session-idle-ttl`). */
const IDLE_TTL_MS = 24 * 60 * 60 * 1000;

describe('POST /v1/incoming', () => {
  it('answers 202 only once task.started is in the log file', async () => {
    const relay = await Relay.start();
    const first = await relay.post({ session_id: 's', task_id: 't1', text: script(SLEEP_FOREVER) });
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ ok: true, session_id: 's', task_id: 't1' });
    expect(readEvents(relay.db).filter((e) => e.session_id === 's')).toEqual([
      { type: 'session.opened', session_id: 's', generation: relay.taskSession('s').generation, form: 'A', at: expect.any(Number) },
      { type: 'task.started', session_id: 's', task_id: 't1', text: script(SLEEP_FOREVER), at: expect.any(Number) },
    ]);

    const second = await relay.post({ session_id: 's', task_id: 't2', text: 'hello', system_prelude: 'standing context' });
    expect(second.status).toBe(202);
    expect(
      readEvents(relay.db)
        .filter((e) => e.type === 'task.started')
        .at(-1),
    ).toEqual({
      type: 'task.started',
      session_id: 's',
      task_id: 't2',
      text: 'hello',
      system_prelude: 'standing context',
      at: expect.any(Number),
    });
  });

  it('returns before the task completes: the reply comes later, from background work', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const gated: Agent = {
      name: 'gated',
      async respond(turn, reply) {
        await released;
        await reply.message(`done: ${turn.text}`);
      },
    };
    const relay = await Relay.start({ agent: gated });
    const stream = await relay.subscribe('s');
    const accepted = await relay.post({ session_id: 's', task_id: 't1', text: 'work' });
    expect(accepted.status).toBe(202);
    expect(relay.taskSession('s').pending_task_ids).toEqual(['t1']);
    expect(readEvents(relay.db).filter((e) => e.type === 'task.settled')).toEqual([]);
    expect(stream.frames).toEqual([]);

    release();
    await stream.untilReplies(1);
    expect(stream.replies[0]!.json).toMatchObject({ task_id: 't1', status: 'message', reply_text: 'done: work' });
  });

  it('starts no second task for a retried task_id and says it is a duplicate', async () => {
    const relay = await Relay.start();
    const stream = await relay.subscribe('s');
    const body = { session_id: 's', task_id: 't1', text: script({ message: 'once' }) };
    const [a, b] = await Promise.all([relay.post(body), relay.post(body)]);
    expect([a.body, b.body]).toContainEqual({ ok: true, session_id: 's', task_id: 't1' });
    expect([a.body, b.body]).toContainEqual({ ok: true, session_id: 's', task_id: 't1', duplicate: true });
    expect([a.status, b.status]).toEqual([202, 202]);
    await relay.settled('t1');
    // After it settled, and with other text: still the same task.
    const late = await relay.post({ ...body, text: 'something else' });
    expect(late.status).toBe(202);
    expect(late.body).toEqual({ ok: true, session_id: 's', task_id: 't1', duplicate: true });
    // Task ids are per session.
    const elsewhere = await relay.post({ ...body, session_id: 'other' });
    expect(elsewhere.body).toEqual({ ok: true, session_id: 'other', task_id: 't1' });

    await relay.turn('s', 't2', { message: 'next' });
    await stream.untilReplies(2);
    expect(stream.replies.map((r) => [r.json.task_id, r.json.reply_text])).toEqual([
      ['t1', 'once'],
      ['t2', 'next'],
    ]);
    const started = readEvents(relay.db).filter((e) => e.type === 'task.started' && e.task_id === 't1');
    expect(started.map((e) => e.session_id)).toEqual(['s', 'other']);
  });

  it.each(['application/json', 'application/json; charset=utf-8', 'Application/JSON; Charset=UTF-8', 'application/json;charset="utf8"'])(
    'accepts JSON declared as %s',
    async (contentType) => {
      const relay = await Relay.start();
      const body = { session_id: 's', task_id: 't1', text: 'hi' };
      const accepted = await request(`${relay.url}/v1/incoming`, { token: TOKEN, body, headers: { 'content-type': contentType } });
      expect(accepted.status).toBe(202);
      expect(accepted.body).toEqual({ ok: true, session_id: 's', task_id: 't1' });
    },
  );

  it('accepts a body of exactly 1 MiB and refuses one a byte larger', async () => {
    const relay = await Relay.start();
    const empty = JSON.stringify({ session_id: 's', task_id: 'big', text: '' });
    const fill = (bytes: number) => `{"session_id":"s","task_id":"big","text":"${'x'.repeat(bytes - empty.length)}"}`;
    const url = `${relay.url}/v1/incoming`;
    const headers = { 'content-type': 'application/json' };
    const over = await request(url, { token: TOKEN, rawBody: fill(1024 * 1024 + 1), headers });
    expect(over.status).toBe(413);
    const exact = await request(url, { token: TOKEN, rawBody: fill(1024 * 1024), headers });
    expect(exact.status).toBe(202);
    expect(exact.body).toEqual({ ok: true, session_id: 's', task_id: 'big' });
  });
});

describe('ended sessions', () => {
  it('ends by host.endSession(): pending tasks settle session_ended, streams end, later messages are ignored', async () => {
    const relay = await Relay.start();
    const stream = await relay.subscribe('s');
    await relay.turn('s', 't0', { message: 'before' });
    await relay.settled('t0');
    await relay.turn('s', 't1', { typing: 'working' }, SLEEP_FOREVER);
    await until(() => relay.count('task.progressed', 't1') === 1, 't1 working');

    expect(await relay.t.host.endSession('s')).toBe(true);
    await stream.untilEnded();
    expect(stream.frames.map((f) => [f.id, JSON.parse(f.data)])).toEqual([
      [idOf(relay, 's', 1), expect.objectContaining({ task_id: 't0', status: 'message', reply_text: 'before' })],
      [undefined, { session_id: 's', task_id: 't1', status: 'typing', label: 'working' }],
      [idOf(relay, 's', 2), sessionEnded('s', 't1')],
    ]);
    expect(await relay.t.host.endSession('s')).toBe(false);

    const later = await relay.post({ session_id: 's', task_id: 't2', text: 'hello?' });
    expect(later.status).toBe(200);
    expect(later.body).toEqual(ignored);
    const retried = await relay.post({ session_id: 's', task_id: 't1', text: 'again' });
    expect(retried.body).toEqual(ignored);
    const log = readEvents(relay.db).filter((e) => e.session_id === 's');
    expect(log.filter((e) => e.type === 'session.ended')).toEqual([
      { type: 'session.ended', session_id: 's', reason: 'host', at: expect.any(Number) },
    ]);
    expect(log.at(-1)!.type).toBe('session.ended');
    expect(log.filter((e) => e.type === 'task.started').map((e) => e.task_id)).toEqual(['t0', 't1']);
  });

  it('answers 204 to a reader of an ended session with nothing after its cursor, and replays what is', async () => {
    const relay = await Relay.start();
    await relay.turn('s', 't1', { message: 'one' });
    await relay.turn('s', 't2', { message: 'two' });
    await relay.settled('t1');
    await relay.settled('t2');
    await relay.t.host.endSession('s');

    const fresh = await relay.open('s');
    expect(fresh.status).toBe(204);
    const caughtUp = await relay.open('s', { lastEventId: idOf(relay, 's', 2) });
    expect(caughtUp.status).toBe(204);

    const behind = await relay.open('s', { lastEventId: idOf(relay, 's', 1) });
    expect(behind.status).toBe(200);
    await behind.untilEnded();
    expect(behind.messages[0]).toEqual({ kind: 'comment', comment: 'open' });
    expect(behind.frames.map((f) => [f.id, f.event, JSON.parse(f.data)])).toEqual([
      [idOf(relay, 's', 2), undefined, expect.objectContaining({ task_id: 't2', reply_text: 'two' })],
      [undefined, 'resync', { type: 'resync', session_id: 's', missed_task_ids: [], recovery_complete: true }],
    ]);
  });

  it('ends by the agent: earlier steps are delivered first, then other pending tasks settle and the stream ends', async () => {
    const relay = await Relay.start();
    const stream = await relay.subscribe('s');
    await relay.turn('s', 'waiting', SLEEP_FOREVER);
    await relay.turn('s', 'closer', { typing: 'wrapping up' }, { message: 'bye' }, { end_session: true }, { message: 'after the end' });
    await stream.untilEnded();

    expect(stream.frames.map((f) => [f.id, JSON.parse(f.data)])).toEqual([
      [undefined, { session_id: 's', task_id: 'closer', status: 'typing', label: 'wrapping up' }],
      [idOf(relay, 's', 1), expect.objectContaining({ task_id: 'closer', status: 'message', reply_text: 'bye' })],
      [idOf(relay, 's', 2), sessionEnded('s', 'waiting')],
    ]);
    const later = await relay.post({ session_id: 's', task_id: 't3', text: 'hello?' });
    expect(later.status).toBe(200);
    expect(later.body).toEqual(ignored);
    expect(relay.t.host.session('s')).toMatchObject({ state: 'ended', end_reason: 'agent', pending_task_ids: [] });
    // The session's end aborted the agent's signal: the step after end_session never ran.
    const last = relay.events.at(-1);
    await aMoment();
    expect(relay.events.at(-1)).toBe(last);
    expect(relay.count('reply.dropped')).toBe(0);
  });

  it('settles the task that ends its own session errored/session_ended', async () => {
    const relay = await Relay.start();
    const stream = await relay.subscribe('s');
    await relay.turn('s', 't1', { tool_call: 'hang up' }, { end_session: true });
    await stream.untilEnded();
    expect(stream.frames.map((f) => [f.id, JSON.parse(f.data)])).toEqual([
      [undefined, { session_id: 's', task_id: 't1', status: 'tool_call', label: 'hang up' }],
      [idOf(relay, 's', 1), sessionEnded('s', 't1')],
    ]);
  });

  it('ends a session 24 h (by default) after its last logged activity: pending tasks settle session_ended, streams end, later messages are ignored', async () => {
    const clock = new SimulatedClock();
    const relay = await Relay.start({ clock });
    const quiet = await relay.subscribe('quiet');
    const stuck = await relay.subscribe('stuck');
    const opened = clock.now();
    await relay.turn('stuck', 's1', { typing: 'working' }, SLEEP_FOREVER);
    await relay.turn('quiet', 'q1', { message: 'hi' });
    await relay.settled('q1');
    await until(() => relay.count('task.progressed', 's1') === 1, 's1 working');
    // A minute later 'quiet' is active again: its deadline moves, 'stuck''s does not.
    clock.increment(60_000);
    await relay.turn('quiet', 'q2', { message: 'again' });
    await relay.settled('q2');

    clock.incrementTo(opened + IDLE_TTL_MS - 1);
    await aMoment();
    expect(relay.count('session.ended')).toBe(0);
    clock.increment(1);
    await stuck.untilEnded();
    clock.incrementTo(opened + 60_000 + IDLE_TTL_MS - 1);
    await aMoment();
    expect(quiet.ended).toBe(false);
    clock.increment(1);
    await quiet.untilEnded();

    expect(relay.events.filter((e) => e.type === 'session.ended')).toEqual([
      { type: 'session.ended', session_id: 'stuck', reason: 'idle', at: opened + IDLE_TTL_MS },
      { type: 'session.ended', session_id: 'quiet', reason: 'idle', at: opened + 60_000 + IDLE_TTL_MS },
    ]);
    expect(quiet.frames.map((f) => [f.id, JSON.parse(f.data).reply_text])).toEqual([
      [idOf(relay, 'quiet', 1), 'hi'],
      [idOf(relay, 'quiet', 2), 'again'],
    ]);
    expect(stuck.frames.map((f) => [f.id, JSON.parse(f.data)])).toEqual([
      [undefined, { session_id: 'stuck', task_id: 's1', status: 'typing', label: 'working' }],
      [idOf(relay, 'stuck', 1), sessionEnded('stuck', 's1')],
    ]);
    for (const session of ['quiet', 'stuck']) {
      const later = await relay.post({ session_id: session, task_id: 't2', text: 'hello?' });
      expect(later.status).toBe(200);
      expect(later.body).toEqual(ignored);
      expect(relay.t.host.session(session)).toMatchObject({ state: 'ended', end_reason: 'idle' });
    }
  });

  it('re-arms idle deadlines from the log on start: one that passed while the host was down ends its session at once', async () => {
    const clock = new SimulatedClock();
    const before = await Relay.start({ clock });
    const early = clock.now();
    await before.turn('early', 'e1', { message: 'hi' });
    await before.settled('e1');
    clock.increment(60_000);
    await before.turn('late', 'l1', { message: 'hi' });
    await before.settled('l1');
    const dir = await before.closeKeepingLog();

    // Down past 'early''s deadline, not past 'late''s.
    clock.incrementTo(early + IDLE_TTL_MS + 1_000);
    const relay = await Relay.start({ clock, dir });
    // A simulated timer due now runs when time moves, even by nothing.
    clock.increment(0);
    await until(() => relay.count('session.ended') === 1, "'early' ended");
    expect(relay.events.filter((e) => e.type === 'session.ended')).toEqual([
      { type: 'session.ended', session_id: 'early', reason: 'idle', at: early + IDLE_TTL_MS + 1_000 },
    ]);
    clock.incrementTo(early + 60_000 + IDLE_TTL_MS - 1);
    await aMoment();
    expect(relay.t.host.session('late')).toMatchObject({ state: 'open' });
    clock.increment(1);
    await until(() => relay.count('session.ended') === 2, "'late' ended");
    expect(relay.events.filter((e) => e.type === 'session.ended').at(-1)).toEqual({
      type: 'session.ended',
      session_id: 'late',
      reason: 'idle',
      at: early + 60_000 + IDLE_TTL_MS,
    });
  });
});
