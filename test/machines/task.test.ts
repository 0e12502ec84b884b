import { describe, expect, it } from 'vitest';
import type { TerminalReply } from '../../protocol/index.js';
import { stepper } from '../../machines/core/step.js';
import { initialTransition, transition } from 'xstate';
import { initialTask, taskMachine, type TaskMachineEvent } from '../../machines/chat/task.js';

const task = stepper(taskMachine);

const answer: TerminalReply = { session_id: 's1', task_id: 't1', status: 'message', message_id: 'm1', reply_text: 'done' };
const otherAnswer: TerminalReply = { session_id: 's1', task_id: 't1', status: 'completed' };

function started() {
  return task.initial({ task_id: 't1', at: 100 })[0];
}

describe('task (3.1): a user message starts a pending task', () => {
  it('(none) + user message -> pending', () => {
    const [snapshot, actions] = task.initial({ task_id: 't1', at: 100 });
    expect(snapshot.value).toBe('pending');
    expect(snapshot.context).toStrictEqual({ task_id: 't1', startedAt: 100 });
    expect(actions).toEqual([]);
  });
});

describe('task (3.1): the table', () => {
  it.each<{ event: TaskMachineEvent; value: unknown; context: object }>([
    { event: { type: 'reply.progress', at: 110 }, value: 'pending', context: { task_id: 't1', startedAt: 100 } },
    {
      event: { type: 'reply.terminal', reply: answer, at: 120 },
      value: 'settled',
      context: { task_id: 't1', startedAt: 100, settledAt: 120, reply: answer },
    },
  ])('pending + $event.type -> $value', ({ event, value, context }) => {
    const [next, actions] = task.next(started(), event);
    expect(next.value).toEqual(value);
    expect(next.context).toStrictEqual(context);
    expect(actions).toEqual([]);
  });

  it.each<TerminalReply>([
    answer,
    { session_id: 's1', task_id: 't1', status: 'completed' },
    { session_id: 's1', task_id: 't1', status: 'silent' },
    { session_id: 's1', task_id: 't1', status: 'errored', error_code: 'agent_error', error_message: 'boom' },
  ])('every terminal status settles it: $status', (reply) => {
    const [next] = task.next(started(), { type: 'reply.terminal', reply, at: 140 });
    expect(next.value).toBe('settled');
    expect(next.status).toBe('done');
    expect(next.context.reply).toBe(reply);
  });

  it('progress any number of times keeps it pending and changes nothing', () => {
    let s = started();
    for (let at = 101; at <= 105; at += 1) [s] = task.next(s, { type: 'reply.progress', at });
    expect(s.value).toBe('pending');
    expect(s.context).toStrictEqual({ task_id: 't1', startedAt: 100 });
  });
});

describe('task (3.1): a settled task ignores further events', () => {
  const settled = task.next(started(), { type: 'reply.terminal', reply: answer, at: 120 })[0];

  const later: TaskMachineEvent[] = [
    { type: 'reply.progress', at: 200 },
    { type: 'reply.terminal', reply: otherAnswer, at: 200 },
  ];

  it.each(later)('settled + $type -> settled, first reply kept', (event) => {
    const [next, actions] = task.next(settled, event);
    expect(next.value).toBe('settled');
    expect(next.context).toStrictEqual({ task_id: 't1', startedAt: 100, settledAt: 120, reply: answer });
    expect(actions).toEqual([]);
  });
});

describe('initialTask', () => {
  it("is the machine's own initial snapshot, every time", () => {
    const input = { task_id: 't-7', at: 1_234 };
    const [initial, actions] = initialTransition(taskMachine, input);
    initialTask({ task_id: 't-6', at: 1_000 });
    const resolved = initialTask(input);
    expect(actions).toEqual([]);
    expect([resolved.value, resolved.status, resolved.context]).toEqual([initial.value, initial.status, initial.context]);
    // And it moves on like the initial snapshot does.
    const reply = { session_id: 's', task_id: 't-7', status: 'completed' as const };
    const [a] = transition(taskMachine, resolved, { type: 'reply.terminal', reply, at: 2_000 });
    const [b] = transition(taskMachine, initial, { type: 'reply.terminal', reply, at: 2_000 });
    expect([a.value, a.context]).toEqual([b.value, b.context]);
  });
});
