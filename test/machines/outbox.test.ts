import { describe, expect, it } from 'vitest';
import { foldEvents } from '../../src/machines/decider.js';
import type { DeliveryEvent, TaskProgressed, TaskSettled } from '../../src/machines/events.js';
import { head, outboxDecider, type Outbox } from '../../src/machines/outbox.js';
import { deciderSpecification } from '../support/decider.js';

const S = 's';
const url = 'http://127.0.0.1:9/cb';
const spec = deciderSpecification(outboxDecider);

const typing = (n: number, task_id: string, label = `step ${n}`): TaskProgressed => ({
  type: 'task.progressed',
  session_id: S,
  task_id,
  reply: { session_id: S, task_id, status: 'typing', label },
  delivery: { n, url, token: 'k', task_id },
  at: n,
});
const answer = (n: number, task_id: string): TaskSettled => ({
  type: 'task.settled',
  session_id: S,
  task_id,
  reply: { session_id: S, task_id, status: 'message', message_id: `m${n}`, reply_text: 'done' },
  cause: 'agent',
  delivery: { n, url, token: 'k', task_id },
  at: n,
});
const attempted = (n: number, attempt = 1): DeliveryEvent => ({ type: 'delivery.attempted', session_id: S, n, attempt, at: 100 + n });
const queued = (outbox: Outbox) => [...outbox.queue.keys()];

describe('outbox: queue order and coalesced progress', () => {
  it('only the head is attempted, in queue order', () => {
    spec.given([answer(1, 'a'), answer(2, 'b')]).when({ type: 'attempt', at: 50 }).then([{ type: 'delivery.attempted', session_id: S, n: 1, attempt: 1, at: 50 }], 'recorded');
    spec.given([answer(1, 'a'), answer(2, 'b'), attempted(1)]).when({ type: 'attempt', at: 150 }).thenNothing('unchanged');
  });

  it('progress waiting behind the head is replaced by a newer reply for its task', () => {
    const events = [answer(1, 'a'), attempted(1), typing(2, 'b'), typing(3, 'b'), typing(4, 'c')];
    expect(queued(foldEvents(outboxDecider, events))).toEqual([1, 3, 4]);
    expect(queued(foldEvents(outboxDecider, [...events, answer(5, 'b')]))).toEqual([1, 4, 5]);
  });

  it('the head is never dropped: it goes out as a written frame would', () => {
    const outbox = foldEvents(outboxDecider, [typing(1, 'a'), typing(2, 'a'), answer(3, 'a')]);
    expect(queued(outbox)).toEqual([1, 3]);
    expect(head(outbox)!.context.delivery.n).toBe(1);
  });

  it('a session_ended answer ends the session; abandon then takes everything waiting', () => {
    const given = [answer(1, 'a'), answer(2, 'b'), attempted(1)];
    const outcome = { kind: 'answered', status: 200, sessionEnded: true } as const;
    spec.given(given).when({ type: 'outcome', n: 1, outcome, at: 200 }).then(
      [{ type: 'delivery.succeeded', session_id: S, n: 1, attempt: 1, status: 200, at: 200 }],
      'session_ended',
    );
    spec.given(given).when({ type: 'abandon', at: 300 }).then([{ type: 'delivery.abandoned', session_id: S, n: 2, attempts: 0, reason: 'session_ended', at: 300 }]);
  });
});
