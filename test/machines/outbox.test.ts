import { describe, expect, it } from 'vitest';
import { foldEvents } from '../../machines/core/decider.js';
import type { DeliveryEvent, MessageReceived, ReplyQueued, TaskProgressed, TaskSettled, TaskStarted } from '../../machines/chat/events.js';
import { outboxDecider, type Outbox } from '../../machines/chat/outbox.js';
import { deciderSpecification } from '../support/decider.js';

const S = 's';
const X = { url: 'http://127.0.0.1:9/x', token: 'kx' };
const Y = { url: 'http://127.0.0.1:9/y', token: 'ky' };
const spec = deciderSpecification(outboxDecider);

/** Form A: a task that names callback X (every test task does, unless it says otherwise). */
const started = (task_id: string, callback: 'same' | typeof X = X): TaskStarted => ({
  type: 'task.started',
  session_id: S,
  task_id,
  text: 'q',
  ...(callback === 'same' ? { same_callback: true as const } : { callback }),
  at: 0,
});
const typing = (n: number, task_id: string, label = `step ${n}`): TaskProgressed => ({
  type: 'task.progressed',
  session_id: S,
  task_id,
  reply: { session_id: S, task_id, status: 'typing', label },
  delivery: { n, task_id },
  at: n,
});
const answer = (n: number, task_id: string): TaskSettled => ({
  type: 'task.settled',
  session_id: S,
  task_id,
  reply: { session_id: S, task_id, status: 'message', message_id: `m${n}`, reply_text: 'done' },
  cause: 'agent',
  delivery: { n, task_id },
  at: n,
});
const attempted = (n: number, attempt = 1): DeliveryEvent => ({ type: 'delivery.attempted', session_id: S, n, attempt, at: 100 + n });
const queued = (outbox: Outbox) => [...outbox.queue.keys()];
const targets = (outbox: Outbox) => [...outbox.queue.values()].map((d) => [d.context.delivery.n, d.context.callback.url]);
const tasks = ['a', 'b', 'c'].map((id) => started(id));

describe('outbox: queue order and coalesced progress', () => {
  it('only the head is attempted, in queue order', () => {
    spec
      .given([...tasks, answer(1, 'a'), answer(2, 'b')])
      .when({ type: 'attempt', at: 50 })
      .then([{ type: 'delivery.attempted', session_id: S, n: 1, attempt: 1, at: 50 }], 'recorded');
    spec
      .given([...tasks, answer(1, 'a'), answer(2, 'b'), attempted(1)])
      .when({ type: 'attempt', at: 150 })
      .thenNothing('unchanged');
  });

  const superseded = (n: number, by: number, at: number): DeliveryEvent => ({ type: 'delivery.superseded', session_id: S, n, by, at });

  it('progress waiting behind the head is superseded by a newer reply for its task, and leaves the queue uncounted', () => {
    const given = [...tasks, answer(1, 'a'), attempted(1), typing(2, 'b'), typing(3, 'b'), typing(4, 'c')];
    spec
      .given(given)
      .when({ type: 'coalesce', n: 3, at: 10 })
      .then([superseded(2, 3, 10)], 'recorded');
    spec
      .given([...given, superseded(2, 3, 10), answer(5, 'b')])
      .when({ type: 'coalesce', n: 5, at: 20 })
      .then([superseded(3, 5, 20)]);
    const outbox = foldEvents(outboxDecider, [...given, superseded(2, 3, 10), answer(5, 'b'), superseded(3, 5, 20)]);
    expect([queued(outbox), outbox.succeeded, outbox.abandoned]).toEqual([[1, 4, 5], 0, 0]);
  });

  it("Form B: only typing is coalesced; an older agent's tool_call is a one-shot reply, carried through (PROTOCOL.md 3b.4)", () => {
    const received: MessageReceived = { type: 'message.received', session_id: S, task_id: 'u', text: 'q', callback: X, at: 0 };
    const reply = (n: number, body: ReplyQueued['reply']): ReplyQueued => ({
      type: 'reply.queued',
      session_id: S,
      reply: body,
      cause: 'agent',
      delivery: { n, task_id: 'u' },
      at: n,
    });
    const given = [
      received,
      reply(1, { session_id: S, task_id: 'u', status: 'message', message_id: 'm1', reply_text: 'r' }),
      attempted(1),
      reply(2, { session_id: S, task_id: 'u', status: 'tool_call', label: 'lookup' }),
      reply(3, { session_id: S, task_id: 'u', status: 'typing', label: 'thinking' }),
      reply(4, { session_id: S, task_id: 'u', status: 'silent' }),
    ];
    spec
      .given(given)
      .when({ type: 'coalesce', n: 4, at: 10 })
      .then([superseded(3, 4, 10)], 'recorded');
  });

  it('the head is never superseded: it goes out as a written frame would', () => {
    spec
      .given([...tasks, typing(1, 'a'), typing(2, 'a'), answer(3, 'a')])
      .when({ type: 'coalesce', n: 3, at: 5 })
      .then([superseded(2, 3, 5)]);
  });

  it('a log written before coalescing was logged still folds: its progress was queued and attempted in turn', () => {
    const older = [...tasks, answer(1, 'a'), typing(2, 'b'), typing(3, 'b'), attempted(1), { ...attempted(2), at: 200 }];
    expect(queued(foldEvents(outboxDecider, older))).toEqual([1, 2, 3]);
  });

  it('a session_ended answer ends the session; abandon then takes everything waiting', () => {
    const given = [...tasks, answer(1, 'a'), answer(2, 'b'), attempted(1)];
    const outcome = { kind: 'answered', status: 200, sessionEnded: true } as const;
    spec
      .given(given)
      .when({ type: 'outcome', n: 1, outcome, at: 200 })
      .then([{ type: 'delivery.succeeded', session_id: S, n: 1, attempt: 1, status: 200, at: 200 }], 'session_ended');
    spec
      .given(given)
      .when({ type: 'abandon', at: 300 })
      .then([{ type: 'delivery.abandoned', session_id: S, n: 2, attempts: 0, reason: 'session_ended', at: 300 }]);
  });
});

describe('outbox: callbacks are logged once, where advertised', () => {
  it("Form A: a task's replies go to the callback its message named, even after the latest changed", () => {
    const outbox = foldEvents(outboxDecider, [
      started('a'),
      started('b', 'same'),
      started('c', Y),
      answer(1, 'b'),
      answer(2, 'c'),
      typing(3, 'a'),
    ]);
    expect(targets(outbox)).toEqual([
      [1, X.url],
      [2, Y.url],
      [3, X.url],
    ]);
    // A settled task's callback is no longer kept.
    expect([...outbox.taskCallbacks.keys()]).toEqual(['a']);
  });

  it('Form B: a reply goes to the latest callback when it was queued, and keeps it', () => {
    const received = (task_id: string, callback?: typeof X): MessageReceived => ({
      type: 'message.received',
      session_id: S,
      task_id,
      text: 'q',
      ...(callback ? { callback } : {}),
      at: 0,
    });
    const reply = (n: number): ReplyQueued => ({
      type: 'reply.queued',
      session_id: S,
      reply: { session_id: S, task_id: 'u', status: 'message', message_id: `m${n}`, reply_text: 'r' },
      cause: 'agent',
      delivery: { n, task_id: 'u' },
      at: n,
    });
    const outbox = foldEvents(outboxDecider, [received('u1', X), reply(1), received('u2'), reply(2), received('u3', Y), reply(3)]);
    expect(targets(outbox)).toEqual([
      [1, X.url],
      [2, X.url],
      [3, Y.url],
    ]);
  });

  it('an ended session forgets its callbacks; what is queued still goes where it was queued for', () => {
    const outbox = foldEvents(outboxDecider, [
      started('a'),
      answer(1, 'a'),
      started('b'),
      { type: 'session.ended', session_id: S, reason: 'host', at: 9 },
    ]);
    expect([outbox.callback, outbox.taskCallbacks.size, targets(outbox)]).toEqual([undefined, 0, [[1, X.url]]]);
  });

  it('a delivery logged with its callback (older logs) goes there', () => {
    const legacy: TaskSettled = {
      type: 'task.settled',
      session_id: S,
      task_id: 'z',
      reply: { session_id: S, task_id: 'z', status: 'completed' },
      cause: 'agent',
      delivery: { n: 1, task_id: 'z', url: Y.url, token: Y.token },
      at: 1,
    };
    expect(targets(foldEvents(outboxDecider, [legacy]))).toEqual([[1, Y.url]]);
  });

  it('a reply queued before any callback is a log that cannot be folded', () => {
    expect(() => foldEvents(outboxDecider, [answer(1, 'z')])).toThrow(/before any callback/);
  });
});
