/** The chat projection driven by events alone: no log, no clock, no I/O. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_SESSION_LIMITS } from '../../engine/chat/config.js';
import { ChatProjection } from '../../engine/chat/projection.js';
import type { DomainEvent } from '../../machines/chat/events.js';

const cb = { url: 'http://127.0.0.1:9/cb', token: 'k' };
const reply = (session_id: string, task_id: string, text: string) => ({
  session_id,
  task_id,
  status: 'message' as const,
  message_id: `m-${task_id}`,
  reply_text: text,
});

const EVENTS: DomainEvent[] = [
  { type: 'host.started', epoch: 'e1', form: 'A', at: 1 },
  { type: 'session.opened', session_id: 'a', generation: 'g', form: 'A', at: 2 },
  { type: 'task.started', session_id: 'a', task_id: 't1', text: 'hi', at: 3 },
  {
    type: 'task.settled',
    session_id: 'a',
    task_id: 't1',
    reply: reply('a', 't1', 'hello'),
    cause: 'agent',
    epoch: 'e1',
    seq: 1,
    data: JSON.stringify(reply('a', 't1', 'hello')),
    at: 4,
  },
  { type: 'session.opened', session_id: 'b', generation: 'h', form: 'B', at: 5 },
  { type: 'message.received', session_id: 'b', task_id: 'u1', text: 'yo', callback: cb, at: 6 },
  { type: 'reply.queued', session_id: 'b', reply: reply('b', 'u1', 'hey'), cause: 'agent', delivery: { n: 1, task_id: 'u1' }, at: 7 },
  { type: 'delivery.attempted', session_id: 'b', n: 1, attempt: 1, at: 8 },
  { type: 'delivery.succeeded', session_id: 'b', n: 1, attempt: 1, status: 200, at: 9 },
  { type: 'session.ended', session_id: 'a', reason: 'host', at: 10 },
];

function project(events: readonly DomainEvent[]): ChatProjection {
  const projection = new ChatProjection(DEFAULT_SESSION_LIMITS);
  for (const event of events) projection.apply(event);
  return projection;
}

describe('chat projection', () => {
  it('routes each session to its form and counts its deliveries', () => {
    const p = project(EVENTS);
    expect([p.formOf('a'), p.formOf('b'), p.formOf('c')]).toEqual(['A', 'B', undefined]);
    expect([p.isEnded('a'), p.isEnded('b')]).toEqual([true, false]);
    expect(p.sessionIds()).toEqual(['a', 'b']);
    expect(p.deliveryStats()).toEqual({ queued: 0, succeeded: 1, abandoned: 0 });
    expect(p.view('a', [])).toMatchObject({ form: 'A', state: 'ended', end_reason: 'host', last_event_id: 'e1:g:1' });
    expect(p.view('b', [])).toMatchObject({ form: 'B', state: 'open', callback_url: cb.url, callbacks: { succeeded: 1 } });
  });

  it('decides with the form the session was opened in, or the host form for a new one', () => {
    const p = project(EVENTS);
    const incoming = (session_id: string) =>
      ({ type: 'incoming', event: { session_id, task_id: 'u2', text: 'x', callback: cb }, generation: 'z', at: 20 }) as const;
    expect(p.decide(incoming('a'), 'B').outcome).toBe('session_ended');
    expect(p.decide(incoming('b'), 'A').events.map((e) => e.type)).toEqual(['message.received']);
    expect(p.decide(incoming('new'), 'B').events).toMatchObject([{ type: 'session.opened', form: 'B' }, { type: 'message.received' }]);
  });

  it('folding the same events again gives the same views', () => {
    const a = project(EVENTS);
    const b = project(EVENTS);
    for (const id of ['a', 'b']) expect(a.view(id, [])).toStrictEqual(b.view(id, []));
  });
});
