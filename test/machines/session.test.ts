import { describe, expect, it } from 'vitest';
import type { TerminalReply } from '../../protocol/index.js';
import { emptyBacklog } from '../../machines/chat/backlog.js';
import type { TaskSessionEvent, SessionOpened, TaskSettled } from '../../machines/chat/events.js';
import {
  evolveTaskSession,
  isTaskSessionEnded,
  initialTaskSession,
  pendingInOrder,
  type SessionLimits,
} from '../../machines/chat/task-session.js';
import { emptyWindow, windowToArray } from '../../machines/core/window.js';
import { LIMITS_SPEC, fold } from './session-fixtures.js';

const S = 's1';
const opened: SessionOpened = { type: 'session.opened', session_id: S, generation: 'g1', form: 'A', at: 1_000 };

const started = (task_id: string, text: string, at: number, system_prelude?: string): TaskSessionEvent => ({
  type: 'task.started',
  session_id: S,
  task_id,
  text,
  ...(system_prelude === undefined ? {} : { system_prelude }),
  at,
});
const progressed = (task_id: string, at: number): TaskSessionEvent => ({
  type: 'task.progressed',
  session_id: S,
  task_id,
  reply: { session_id: S, task_id, status: 'typing', label: 'thinking' },
  at,
});
const message = (task_id: string, reply_text: string): TerminalReply => ({
  session_id: S,
  task_id,
  status: 'message',
  message_id: `m-${task_id}`,
  reply_text,
});
const settled = (task_id: string, seq: number, reply: TerminalReply, at: number, epoch = 'e1'): TaskSettled => ({
  type: 'task.settled',
  session_id: S,
  task_id,
  epoch,
  seq,
  reply,
  data: JSON.stringify(reply),
  cause: 'agent',
  at,
});
const dropped = (task_id: string, at: number): TaskSessionEvent => ({
  type: 'reply.dropped',
  session_id: S,
  task_id,
  status: 'message',
  reason: 'task_settled',
  at,
});
const ended = (at: number): TaskSessionEvent => ({ type: 'session.ended', session_id: S, reason: 'host', at });

function summary(events: readonly TaskSessionEvent[], limits: SessionLimits = LIMITS_SPEC) {
  const s = fold([opened, ...events], limits)!;
  return {
    value: s.value,
    pending: [...s.context.pending.keys()],
    lastActivityAt: s.context.lastActivityAt,
    backlog: windowToArray(s.context.backlog.replies).map((r) => r.id),
  };
}

describe('initialSession', () => {
  it('session.opened -> open with an empty backlog of that generation', () => {
    const s = initialTaskSession(opened, LIMITS_SPEC);
    expect(s.value).toBe('open');
    expect(isTaskSessionEnded(s)).toBe(false);
    expect(s.context).toStrictEqual({
      session_id: S,
      openedAt: 1_000,
      lastActivityAt: 1_000,
      backlog: emptyBacklog('g1'),
      pending: new Map(),
      callback: undefined,
      taskIds: emptyWindow(),
      prelude: undefined,
      memory: emptyWindow(),
      memoryChars: 0,
      endedAt: undefined,
      endReason: undefined,
      deliveries: 0,
      limits: LIMITS_SPEC,
    });
  });
});

describe('evolveSession: the session table', () => {
  it.each<{ name: string; events: TaskSessionEvent[]; expected: ReturnType<typeof summary> }>([
    {
      name: 'task.started',
      events: [started('t1', 'hi', 1_010)],
      expected: { value: 'open', pending: ['t1'], lastActivityAt: 1_010, backlog: [] },
    },
    {
      name: 'two task.started',
      events: [started('t1', 'hi', 1_010), started('t2', 'again', 1_020)],
      expected: { value: 'open', pending: ['t1', 't2'], lastActivityAt: 1_020, backlog: [] },
    },
    {
      name: 'task.progressed',
      events: [started('t1', 'hi', 1_010), progressed('t1', 1_015)],
      expected: { value: 'open', pending: ['t1'], lastActivityAt: 1_015, backlog: [] },
    },
    {
      name: 'task.progressed for a task that is not pending',
      events: [started('t1', 'hi', 1_010), progressed('zz', 1_015)],
      expected: { value: 'open', pending: ['t1'], lastActivityAt: 1_015, backlog: [] },
    },
    {
      name: 'task.settled',
      events: [started('t1', 'hi', 1_010), started('t2', 'x', 1_011), settled('t1', 1, message('t1', 'hello'), 1_020)],
      expected: { value: 'open', pending: ['t2'], lastActivityAt: 1_020, backlog: ['e1:g1:1'] },
    },
    {
      name: 'reply.dropped',
      events: [started('t1', 'hi', 1_010), settled('t1', 1, message('t1', 'hello'), 1_020), dropped('t1', 1_030)],
      expected: { value: 'open', pending: [], lastActivityAt: 1_020, backlog: ['e1:g1:1'] },
    },
    {
      name: 'session.ended',
      // An ended session keeps no replies in memory; a reconnect replays them from the log.
      events: [started('t1', 'hi', 1_010), settled('t1', 1, message('t1', 'hello'), 1_020), ended(1_040)],
      expected: { value: 'ended', pending: [], lastActivityAt: 1_040, backlog: [] },
    },
    {
      name: 'reply.dropped after session.ended',
      events: [ended(1_040), dropped('t1', 1_050)],
      expected: { value: 'ended', pending: [], lastActivityAt: 1_040, backlog: [] },
    },
  ])('open + $name', ({ events, expected }) => {
    expect(summary(events)).toEqual(expected);
  });

  it('keeps pending tasks in start order, whatever their ids (a record would put "10" before "b")', () => {
    const s = fold([
      opened,
      started('b', 'x', 1_010),
      started('10', 'x', 1_020),
      started('2', 'x', 1_030),
      settled('10', 1, message('10', 'y'), 1_031),
    ])!;
    expect(pendingInOrder(s).map((t) => t.context.task_id)).toEqual(['b', '2']);
  });

  it('task.progressed keeps the task pending', () => {
    const s = fold([opened, started('t1', 'hi', 1_010), progressed('t1', 1_015)])!;
    expect(s.context.pending.get('t1')!.value).toBe('pending');
    expect(s.context.pending.get('t1')!.context).toStrictEqual({ task_id: 't1', startedAt: 1_010 });
  });

  it('task.settled retains the reply with its id, its data and its UTF-8 size', () => {
    const reply = message('t1', 'héllo'); // é is two bytes
    const s = fold([opened, started('t1', 'hi', 1_010), settled('t1', 1, reply, 1_020, 'e7')])!;
    const data = JSON.stringify(reply);
    expect(windowToArray(s.context.backlog.replies)).toStrictEqual([
      { seq: 1, id: 'e7:g1:1', task_id: 't1', data, bytes: data.length + 1 },
    ]);
    expect(s.context.backlog.lastSeq).toBe(1);
    expect(s.context.backlog.bytes).toBe(data.length + 1);
  });

  it('session.ended records when and why', () => {
    const s = fold([opened, ended(1_040)])!;
    expect(isTaskSessionEnded(s)).toBe(true);
    expect([s.context.endedAt, s.context.endReason, s.context.lastActivityAt]).toEqual([1_040, 'host', 1_040]);
  });

  it('session.ended keeps the ids the session issued, not its replies', () => {
    const s = fold([opened, started('t1', 'hi', 1_010), settled('t1', 1, message('t1', 'hello'), 1_020, 'e7'), ended(1_040)])!;
    const { backlog } = s.context;
    expect([backlog.generation, backlog.lastSeq, windowToArray(backlog.spans), windowToArray(backlog.replies), backlog.bytes]).toEqual([
      'g1',
      1,
      [{ epoch: 'e7', firstSeq: 1 }],
      [],
      0,
    ]);
  });

  it('session.ended lets go of what fed the agent and the duplicate check', () => {
    const s = fold([opened, started('t1', 'hi', 1_010, 'standing'), settled('t1', 1, message('t1', 'hello'), 1_020), ended(1_040)])!;
    expect([windowToArray(s.context.memory), s.context.memoryChars, s.context.prelude, windowToArray(s.context.taskIds)]).toEqual([
      [],
      0,
      undefined,
      [],
    ]);
  });

  it('remembers the newest taskIdWindow task ids, oldest forgotten first', () => {
    const s = fold([opened, started('t1', 'a', 1_010), started('t2', 'b', 1_020), started('t3', 'c', 1_030)], {
      ...LIMITS_SPEC,
      taskIdWindow: 2,
    })!;
    expect(windowToArray(s.context.taskIds)).toEqual(['t2', 't3']);
  });

  it('reply.dropped changes nothing', () => {
    const before = fold([opened, started('t1', 'hi', 1_010)])!;
    const after = evolveTaskSession(before, {
      type: 'reply.dropped',
      session_id: S,
      task_id: 'x',
      status: 'message',
      reason: 'task_unknown',
      at: 1_099,
    });
    expect(after.value).toBe('open');
    expect(after.context).toStrictEqual(before.context);
  });
});

describe('evolveSession: memory', () => {
  const memory = (events: readonly TaskSessionEvent[], limits: SessionLimits = LIMITS_SPEC) =>
    windowToArray(fold([opened, ...events], limits)!.context.memory);

  it.each<{ status: string; reply: TerminalReply; assistant: boolean }>([
    { status: 'message', reply: message('t1', 'hello'), assistant: true },
    { status: 'completed', reply: { session_id: S, task_id: 't1', status: 'completed' }, assistant: false },
    { status: 'silent', reply: { session_id: S, task_id: 't1', status: 'silent' }, assistant: false },
    {
      status: 'errored',
      reply: { session_id: S, task_id: 't1', status: 'errored', error_code: 'x', error_message: 'y' },
      assistant: false,
    },
  ])('a user turn answered with $status', ({ reply, assistant }) => {
    expect(memory([started('t1', 'hi', 1_010), settled('t1', 1, reply, 1_020)])).toStrictEqual([
      { role: 'user', task_id: 't1', text: 'hi', at: 1_010 },
      ...(assistant ? [{ role: 'assistant', task_id: 't1', text: 'hello', at: 1_020 }] : []),
    ]);
  });

  it('progress does not enter memory', () => {
    expect(memory([started('t1', 'hi', 1_010), progressed('t1', 1_011)])).toStrictEqual([
      { role: 'user', task_id: 't1', text: 'hi', at: 1_010 },
    ]);
  });

  const threeTurns = [
    started('t1', 'one', 1_010),
    settled('t1', 1, message('t1', 'uno'), 1_011),
    started('t2', 'two', 1_020),
    settled('t2', 2, message('t2', 'dos'), 1_021),
    started('t3', 'three', 1_030),
  ];

  it('is bounded by memoryMaxEntries, oldest dropped first', () => {
    expect(memory(threeTurns, { ...LIMITS_SPEC, memoryMaxEntries: 3 })).toStrictEqual([
      { role: 'user', task_id: 't2', text: 'two', at: 1_020 },
      { role: 'assistant', task_id: 't2', text: 'dos', at: 1_021 },
      { role: 'user', task_id: 't3', text: 'three', at: 1_030 },
    ]);
  });

  it.each([
    // 'one' 3 + 'uno' 3 + 'two' 3 + 'dos' 3 + 'three' 5 = 17 characters in all.
    { maxChars: 17, kept: ['one', 'uno', 'two', 'dos', 'three'], chars: 17 },
    { maxChars: 16, kept: ['uno', 'two', 'dos', 'three'], chars: 14 },
    { maxChars: 11, kept: ['two', 'dos', 'three'], chars: 11 },
    // The newest entry stays even when it alone is over the bound.
    { maxChars: 2, kept: ['three'], chars: 5 },
  ])('is bounded by memoryMaxChars ($maxChars): oldest dropped first, the newest always kept', ({ maxChars, kept, chars }) => {
    const s = fold([opened, ...threeTurns], { ...LIMITS_SPEC, memoryMaxChars: maxChars })!;
    expect(windowToArray(s.context.memory).map((e) => e.text)).toEqual(kept);
    expect(s.context.memoryChars).toBe(chars);
  });
});

describe('evolveSession: system_prelude is standing context', () => {
  const prelude = (events: readonly TaskSessionEvent[]) => fold([opened, ...events])!.context.prelude;

  it.each<{ name: string; events: TaskSessionEvent[]; expected: string | undefined }>([
    { name: 'no prelude sent', events: [started('t1', 'a', 1_010)], expected: undefined },
    { name: 'sent on the first task', events: [started('t1', 'a', 1_010, 'coach briefly')], expected: 'coach briefly' },
    {
      name: 'kept by later tasks without one',
      events: [started('t1', 'a', 1_010, 'coach briefly'), started('t2', 'b', 1_020), started('t3', 'c', 1_030)],
      expected: 'coach briefly',
    },
    {
      name: 'replaced by a newer one',
      events: [started('t1', 'a', 1_010, 'coach briefly'), started('t2', 'b', 1_020, 'new playbook'), started('t3', 'c', 1_030)],
      expected: 'new playbook',
    },
  ])('$name -> $expected', ({ events, expected }) => {
    expect(prelude(events)).toBe(expected);
  });

  it('the prelude is not a memory entry; the turn text is', () => {
    const s = fold([opened, started('t1', 'transcript chunk', 1_010, 'coach briefly')])!;
    expect(windowToArray(s.context.memory)).toStrictEqual([{ role: 'user', task_id: 't1', text: 'transcript chunk', at: 1_010 }]);
  });
});

describe('evolveSession: determinism', () => {
  it('folding the same events twice gives deep-equal sessions', () => {
    const events: TaskSessionEvent[] = [opened];
    for (let i = 1; i <= 80; i += 1) {
      events.push(started(`t${i}`, `q${i}`, 1_000 + 10 * i, i === 1 ? 'p' : undefined));
      if (i % 3 === 0) events.push(progressed(`t${i}`, 1_001 + 10 * i));
      events.push(settled(`t${i}`, i, message(`t${i}`, `a${i}`), 1_002 + 10 * i, i > 40 ? 'e2' : 'e1'));
    }
    events.push(started('last', 'pending one', 2_000), ended(2_010));
    const limits = { ...LIMITS_SPEC, maxReplies: 16, ledgerMaxTasks: 32, memoryMaxEntries: 50 };
    const a = fold(events, limits)!;
    const b = fold(events, limits)!;
    expect(a.value).toBe(b.value);
    expect(a.context).toStrictEqual(b.context);
    expect(windowToArray(fold(events.slice(0, -1), limits)!.context.backlog.ledger).length).toBe(32);
  });
});
