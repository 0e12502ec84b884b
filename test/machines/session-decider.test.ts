import { describe, expect, it } from 'vitest';
import { REPLY_ERRORS, type IncomingEvent, type ProgressReply, type ReplyBody, type TerminalReply } from '../../protocol/index.js';
import { commandSession, type Outcome, type SessionCommand } from '../../machines/chat/commands.js';
import type { TaskSessionEvent, TaskSettled } from '../../machines/chat/events.js';
import { isTaskSessionEnded } from '../../machines/chat/task-session.js';
import { windowToArray } from '../../machines/core/window.js';
import { deciderSpecification } from '../support/decider.js';
import { Harness, LIMITS_SPEC, decider, fold } from './session-fixtures.js';

const spec = deciderSpecification(decider);

const S = 's1';
const E = 'e1';
const REPLY_MAX = 256 * 1024;

const incoming = (task_id: string, text: string, at: number, extra: Partial<IncomingEvent> = {}): SessionCommand => ({
  type: 'incoming',
  event: { session_id: S, task_id, text, ...extra },
  generation: 'g1',
  at,
});
const reply = (task_id: string, body: ReplyBody, at: number, epoch = E): SessionCommand => ({
  type: 'reply',
  session_id: S,
  task_id,
  reply: body,
  epoch,
  at,
});
const finish = (task_id: string, at: number, failed = false): SessionCommand => ({
  type: 'finish',
  session_id: S,
  task_id,
  failed,
  epoch: E,
  at,
});
const end = (at: number, reason: 'host' | 'agent' | 'idle' = 'host'): SessionCommand => ({
  type: 'end',
  session_id: S,
  reason,
  epoch: E,
  at,
});
const expire = (at: number, idleTtlMs: number): SessionCommand => ({ type: 'expire', session_id: S, idleTtlMs, epoch: E, at });
const interrupt = (at: number, epoch = E): SessionCommand => ({ type: 'interrupt', session_id: S, epoch, at });

const message = (task_id: string, reply_text: string): TerminalReply => ({
  session_id: S,
  task_id,
  status: 'message',
  message_id: `m-${task_id}`,
  reply_text,
});
const typing = (task_id: string): ReplyBody => ({ session_id: S, task_id, status: 'typing', label: 'thinking' });
const hostError = (task_id: string, code: keyof typeof REPLY_ERRORS): TerminalReply => ({
  session_id: S,
  task_id,
  status: 'errored',
  error_code: code,
  error_message: REPLY_ERRORS[code],
});
const settledEvent = (
  task_id: string,
  seq: number,
  body: TerminalReply,
  cause: TaskSettled['cause'],
  at: number,
  epoch = E,
): TaskSettled => ({
  type: 'task.settled',
  session_id: S,
  task_id,
  epoch,
  seq,
  reply: body,
  data: JSON.stringify(body),
  cause,
  at,
});

/** A session with tasks started at 10, 20, ... and the first `answered` of them answered. */
function withTasks(ids: readonly string[], answered = 0): Harness {
  const h = new Harness();
  ids.forEach((id, i) => h.run(incoming(id, `q-${id}`, 10 * (i + 1))));
  ids.slice(0, answered).forEach((id, i) => h.run(reply(id, message(id, `a-${id}`), 100 + i)));
  return h;
}

/** A message reply whose compact JSON is exactly `bytes` UTF-8 bytes, built from `unit` repeated. */
function messageOfBytes(task_id: string, bytes: number, unit = 'x'): TerminalReply {
  const base = Buffer.byteLength(JSON.stringify(message(task_id, '')));
  const unitBytes = Buffer.byteLength(unit);
  const text = unit.repeat(Math.floor((bytes - base) / unitBytes)) + 'x'.repeat((bytes - base) % unitBytes);
  return message(task_id, text);
}

describe('session decider: incoming', () => {
  it('on an unknown session opens it and starts the task', () => {
    const h = new Harness();
    h.when(incoming('t1', 'hello', 10)).then(
      [
        { type: 'session.opened', session_id: S, generation: 'g1', form: 'A', at: 10 },
        { type: 'task.started', session_id: S, task_id: 't1', text: 'hello', at: 10 },
      ],
      'accepted',
    );
    expect([h.session!.value, h.pendingIds, h.context.openedAt]).toEqual(['open', ['t1'], 10]);
  });

  it('on an open session starts the task only', () => {
    const h = withTasks(['t1'], 1);
    h.when(incoming('t2', 'more', 200, { system_prelude: 'standing' })).then(
      [{ type: 'task.started', session_id: S, task_id: 't2', text: 'more', system_prelude: 'standing', at: 200 }],
      'accepted',
    );
    expect(h.pendingIds).toEqual(['t2']);
  });

  it.each([
    { name: 'a pending task', answered: 0 },
    { name: 'a settled task', answered: 1 },
  ])('a task_id already started ($name) is a duplicate and changes nothing', ({ answered }) => {
    const h = withTasks(['t1'], answered);
    const before = h.session;
    h.when(incoming('t1', 'retry', 300)).thenNothing('duplicate');
    expect(h.session).toBe(before);
  });

  it('a task_id older than the duplicate window starts a new task (the window is bounded)', () => {
    const h = new Harness({ ...LIMITS_SPEC, taskIdWindow: 2 });
    for (const [i, id] of ['t1', 't2', 't3'].entries()) h.run(incoming(id, 'q', 10 * (i + 1)));
    h.run(reply('t2', message('t2', 'b'), 45));
    h.run(reply('t3', message('t3', 'c'), 46));
    // The newest two ids are t2 and t3; t1 is older, yet a pending task is always known.
    h.when(incoming('t1', 'retry', 50)).thenNothing('duplicate');
    h.when(incoming('t2', 'retry', 51)).thenNothing('duplicate');
    h.run(incoming('t4', 'q', 52));
    h.when(incoming('t2', 'much later', 60)).then(
      [{ type: 'task.started', session_id: S, task_id: 't2', text: 'much later', at: 60 }],
      'accepted',
    );
  });

  it('a callback named again is logged once: the later task notes same_callback', () => {
    const cb = { url: 'http://127.0.0.1:9/cb', token: 'k' };
    const h = new Harness();
    h.run(incoming('t1', 'a', 10, { callback: cb }));
    h.when(incoming('t2', 'b', 20, { callback: cb })).then(
      [{ type: 'task.started', session_id: S, task_id: 't2', text: 'b', same_callback: true, at: 20 }],
      'accepted',
    );
    h.when(incoming('t3', 'c', 30)).then([{ type: 'task.started', session_id: S, task_id: 't3', text: 'c', at: 30 }], 'accepted');
    expect([...h.context.pending.values()].map((t) => t.context.callback)).toEqual([cb, cb, undefined]);
  });

  it('on an ended session: session_ended, no events (4.2 rule 1)', () => {
    const h = withTasks(['t1'], 1);
    h.run(end(200));
    const before = h.session;
    h.when(incoming('t2', 'late', 300)).thenNothing('session_ended');
    h.when(incoming('t1', 'late duplicate', 301)).thenNothing('session_ended');
    expect(h.session).toBe(before);
  });
});

describe('session decider: replies', () => {
  it.each<{ status: 'typing' | 'tool_call' }>([{ status: 'typing' }, { status: 'tool_call' }])(
    '$status -> task.progressed, task stays pending, no seq',
    ({ status }) => {
      const h = withTasks(['t1']);
      const body: ProgressReply = { session_id: S, task_id: 't1', status, label: 'working' };
      h.when(reply('t1', body, 50)).then([{ type: 'task.progressed', session_id: S, task_id: 't1', reply: body, at: 50 }], 'progressed');
      expect([h.pendingIds, h.context.backlog.lastSeq, h.context.lastActivityAt]).toEqual([['t1'], 0, 50]);
    },
  );

  it.each<TerminalReply>([
    message('t2', 'answer'),
    { session_id: S, task_id: 't2', status: 'completed' },
    { session_id: S, task_id: 't2', status: 'silent' },
    { session_id: S, task_id: 't2', status: 'errored', error_code: 'tool_failed', error_message: 'nope' },
  ])('first terminal ($status) settles with seq lastSeq + 1', (body) => {
    const h = withTasks(['t1', 't2', 't3'], 1); // lastSeq is 1
    h.when(reply('t2', body, 500)).then([settledEvent('t2', 2, body, 'agent', 500)], 'settled');
    expect([h.pendingIds, h.backlogIds]).toEqual([['t3'], ['e1:g1:1', 'e1:g1:2']]);
  });

  it.each<{ name: string; second: SessionCommand; status: string }>([
    { name: 'a second terminal', second: reply('t1', message('t1', 'again'), 600), status: 'message' },
    { name: 'progress', second: reply('t1', typing('t1'), 600), status: 'typing' },
  ])('$name after the task settled -> reply.dropped task_settled', ({ second, status }) => {
    const h = withTasks(['t1'], 1);
    const before = h.session;
    h.when(second).then([{ type: 'reply.dropped', session_id: S, task_id: 't1', status, reason: 'task_settled', at: 600 }], 'dropped');
    expect(h.context).toStrictEqual(before!.context);
  });

  it('a reply for a task never started -> reply.dropped task_unknown', () => {
    const h = withTasks(['t1']);
    h.when(reply('ghost', message('ghost', 'boo'), 70)).then(
      [{ type: 'reply.dropped', session_id: S, task_id: 'ghost', status: 'message', reason: 'task_unknown', at: 70 }],
      'dropped',
    );
    expect(h.pendingIds).toEqual(['t1']);
  });

  it('a reply for a session never opened -> reply.dropped task_unknown', () => {
    spec
      .given([])
      .when(reply('t1', message('t1', 'x'), 5))
      .then([{ type: 'reply.dropped', session_id: S, task_id: 't1', status: 'message', reason: 'task_unknown', at: 5 }], 'dropped');
  });

  it('a reply after the session ended -> reply.dropped session_ended', () => {
    const h = withTasks(['t1']);
    h.run(end(200));
    h.when(reply('t1', message('t1', 'late'), 300)).then(
      [{ type: 'reply.dropped', session_id: S, task_id: 't1', status: 'message', reason: 'session_ended', at: 300 }],
      'dropped',
    );
  });

  it.each([false, true])("'finish' (failed: %s) settles a still-pending task errored/agent_error", (failed) => {
    const h = withTasks(['t1', 't2'], 1);
    h.when(finish('t2', 400, failed)).then([settledEvent('t2', 2, hostError('t2', 'agent_error'), 'agent_error', 400)], 'settled');
    expect(h.pendingIds).toEqual([]);
  });

  it("'finish' after the task settled changes nothing", () => {
    const h = withTasks(['t1'], 1);
    h.when(finish('t1', 600, true)).then([], 'unchanged');
  });
});

describe('session decider: reply size cap (256 KiB of compact JSON, UTF-8)', () => {
  it.each([
    { name: 'exactly 256 KiB', bytes: REPLY_MAX, unit: 'x', replaced: false },
    { name: '256 KiB + 1', bytes: REPLY_MAX + 1, unit: 'x', replaced: true },
    { name: 'exactly 256 KiB of two-byte characters', bytes: REPLY_MAX, unit: 'é', replaced: false },
    { name: '256 KiB + 1 of two-byte characters (fewer than 256 Ki chars)', bytes: REPLY_MAX + 1, unit: 'é', replaced: true },
  ])('$name -> replaced: $replaced', ({ bytes, unit, replaced }) => {
    const body = messageOfBytes('t1', bytes, unit);
    expect(Buffer.byteLength(JSON.stringify(body))).toBe(bytes);
    const h = withTasks(['t1']);
    const expected = replaced
      ? settledEvent('t1', 1, hostError('t1', 'reply_too_large'), 'reply_too_large', 50)
      : settledEvent('t1', 1, body, 'agent', 50);
    h.when(reply('t1', body, 50)).then([expected], 'settled');
    expect(windowToArray(h.context.backlog.replies).map((r) => [r.id, r.bytes])).toEqual([['e1:g1:1', Buffer.byteLength(expected.data!)]]);
  });

  it('the replacement is the exact errored body the stream will carry', () => {
    const h = withTasks(['t1']);
    const [event] = h.run(reply('t1', messageOfBytes('t1', REPLY_MAX + 100), 50)).events as [TaskSettled];
    expect(event.data).toBe(
      `{"session_id":"s1","task_id":"t1","status":"errored","error_code":"reply_too_large","error_message":"${REPLY_ERRORS.reply_too_large}"}`,
    );
  });
});

describe('session decider: end, expire, interrupt', () => {
  it("'end' settles every pending task errored/session_ended in start order, then ends", () => {
    const h = withTasks(['t1', 't2', 't3', 't4'], 2); // t3, t4 pending; lastSeq 2
    h.when(end(900, 'agent')).then(
      [
        settledEvent('t3', 3, hostError('t3', 'session_ended'), 'session_ended', 900),
        settledEvent('t4', 4, hostError('t4', 'session_ended'), 'session_ended', 900),
        { type: 'session.ended', session_id: S, reason: 'agent', at: 900 },
      ],
      'ended',
    );
    // Ended, it keeps the ids it issued; its replies are read from the log on a reconnect.
    expect([isTaskSessionEnded(h.session!), h.pendingIds, h.context.backlog.lastSeq, h.context.endReason]).toEqual([true, [], 4, 'agent']);
  });

  it("'end' settles in start order even when task ids look like array indices", () => {
    const h = withTasks(['b', '10', '2']);
    expect(h.run(end(900)).events.map((e) => (e.type === 'task.settled' ? [e.task_id, e.seq] : e.type))).toEqual([
      ['b', 1],
      ['10', 2],
      ['2', 3],
      'session.ended',
    ]);
  });

  it("'end' with nothing pending only ends", () => {
    const h = withTasks(['t1'], 1);
    h.when(end(900)).then([{ type: 'session.ended', session_id: S, reason: 'host', at: 900 }], 'ended');
  });

  it.each([
    { name: 'an ended session', ended: true },
    { name: 'an unknown session', ended: undefined },
  ])("'end' on $name is unchanged", ({ ended }) => {
    const h = ended === undefined ? new Harness() : withTasks(['t1']);
    if (ended) h.run(end(900));
    h.when(end(950)).thenNothing('unchanged');
  });

  // Last activity at 100 (t1's answer); idle TTL 1,000: the deadline is 1,100.
  it.each<{ at: number; outcome: Outcome; ends: boolean }>([
    { at: 1_099, outcome: 'unchanged', ends: false },
    { at: 1_100, outcome: 'ended', ends: true },
    { at: 5_000, outcome: 'ended', ends: true },
  ])("'expire' at $at (deadline 1100) -> $outcome", ({ at, outcome, ends }) => {
    const h = withTasks(['t1'], 1);
    expect(h.context.lastActivityAt).toBe(100);
    h.when(expire(at, 1_000)).then(ends ? [{ type: 'session.ended', session_id: S, reason: 'idle', at }] : [], outcome);
    expect(isTaskSessionEnded(h.session!)).toBe(ends);
  });

  it("'expire' settles what is still pending before ending idle", () => {
    const h = withTasks(['t1', 't2'], 1); // t2 pending, last activity 100
    h.when(expire(2_000, 1_000)).then(
      [
        settledEvent('t2', 2, hostError('t2', 'session_ended'), 'session_ended', 2_000),
        { type: 'session.ended', session_id: S, reason: 'idle', at: 2_000 },
      ],
      'ended',
    );
  });

  it("'expire' counts progress as activity", () => {
    const h = withTasks(['t1']);
    h.run(reply('t1', typing('t1'), 500));
    h.when(expire(1_499, 1_000)).thenNothing('unchanged');
    expect(h.run(expire(1_500, 1_000)).outcome).toBe('ended');
  });

  it("'expire' on an ended or unknown session is unchanged", () => {
    const h = withTasks(['t1'], 1);
    h.run(end(200));
    h.when(expire(10_000, 1)).thenNothing('unchanged');
    new Harness().when(expire(10_000, 1)).thenNothing('unchanged');
  });

  it("'interrupt' settles pending tasks errored/interrupted with increasing seqs in the new epoch", () => {
    const h = withTasks(['t1', 't2', 't3'], 1);
    h.when(interrupt(700, 'e2')).then(
      [
        settledEvent('t2', 2, hostError('t2', 'interrupted'), 'interrupted', 700, 'e2'),
        settledEvent('t3', 3, hostError('t3', 'interrupted'), 'interrupted', 700, 'e2'),
      ],
      'settled',
    );
    expect([h.session!.value, h.pendingIds, h.backlogIds]).toEqual(['open', [], ['e1:g1:1', 'e2:g1:2', 'e2:g1:3']]);
    expect(windowToArray(h.context.backlog.spans)).toEqual([
      { epoch: 'e1', firstSeq: 1 },
      { epoch: 'e2', firstSeq: 2 },
    ]);
  });

  it("'interrupt' with nothing pending, or no session, is unchanged", () => {
    withTasks(['t1'], 1).when(interrupt(700)).thenNothing('unchanged');
    new Harness().when(interrupt(700)).thenNothing('unchanged');
  });
});

describe('session decider + evolve: memory', () => {
  it('holds the user turns and the assistant messages, not progress or other statuses', () => {
    const h = new Harness();
    h.run(incoming('t1', 'hello', 10));
    h.run(reply('t1', typing('t1'), 11));
    h.run(reply('t1', message('t1', 'hi there'), 12));
    h.run(incoming('t2', 'do it', 20));
    h.run(reply('t2', { session_id: S, task_id: 't2', status: 'completed' }, 21));
    expect(windowToArray(h.context.memory)).toStrictEqual([
      { role: 'user', task_id: 't1', text: 'hello', at: 10 },
      { role: 'assistant', task_id: 't1', text: 'hi there', at: 12 },
      { role: 'user', task_id: 't2', text: 'do it', at: 20 },
    ]);
  });

  it('is bounded by memoryMaxEntries', () => {
    const h = new Harness({ ...LIMITS_SPEC, memoryMaxEntries: 2 });
    for (let i = 1; i <= 3; i += 1) {
      h.run(incoming(`t${i}`, `q${i}`, 10 * i));
      h.run(reply(`t${i}`, message(`t${i}`, `a${i}`), 10 * i + 1));
    }
    expect(windowToArray(h.context.memory)).toStrictEqual([
      { role: 'user', task_id: 't3', text: 'q3', at: 30 },
      { role: 'assistant', task_id: 't3', text: 'a3', at: 31 },
    ]);
  });

  it('keeps the system_prelude as standing context across later turns', () => {
    const h = new Harness();
    h.run(incoming('t1', 'chunk 1', 10, { system_prelude: 'situation; playbook; one sentence' }));
    h.run(reply('t1', message('t1', 'none'), 11));
    h.run(incoming('t2', 'chunk 2', 20));
    expect(h.context.prelude).toBe('situation; playbook; one sentence');
  });
});

describe('session decider + evolve: determinism', () => {
  it('folding the same decided events twice gives deep-equal contexts', () => {
    const h = new Harness({ ...LIMITS_SPEC, maxReplies: 4, ledgerMaxTasks: 3, memoryMaxEntries: 5 });
    for (let i = 1; i <= 12; i += 1) {
      h.run(incoming(`t${i}`, `q${i}`, 10 * i, i === 1 ? { system_prelude: 'p' } : {}));
      h.run(reply(`t${i}`, typing(`t${i}`), 10 * i + 1));
      if (i % 4 !== 0) h.run(reply(`t${i}`, message(`t${i}`, `a${i}`), 10 * i + 2));
    }
    h.run(interrupt(500, 'e2'));
    h.run(end(600));
    const events: readonly TaskSessionEvent[] = h.log;
    const a = fold(events, { ...LIMITS_SPEC, maxReplies: 4, ledgerMaxTasks: 3, memoryMaxEntries: 5 })!;
    const b = fold(events, { ...LIMITS_SPEC, maxReplies: 4, ledgerMaxTasks: 3, memoryMaxEntries: 5 })!;
    expect(a.value).toBe('ended');
    expect(b.value).toBe('ended');
    expect(a.context).toStrictEqual(b.context);
    expect(a.context).toStrictEqual(h.context);
  });
});

describe('commandSession', () => {
  it.each<{ command: SessionCommand }>([
    { command: incoming('t1', 'x', 1) },
    { command: reply('t1', typing('t1'), 1) },
    { command: finish('t1', 1) },
    { command: end(1) },
    { command: expire(1, 1) },
    { command: interrupt(1) },
  ])('$command.type is about s1', ({ command }) => {
    expect(commandSession(command)).toBe(S);
  });
});
