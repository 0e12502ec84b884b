import { describe, expect, it } from 'vitest';
import type { Outcome, SessionCommand } from '../../machines/chat/commands.js';
import { conversationDecider, type ConversationState } from '../../machines/chat/conversation-decider.js';
import { foldEvents, type Decision } from '../../machines/core/decider.js';
import type { ConversationEvent, MessageReceived, ReplyQueued } from '../../machines/chat/events.js';
import { outboxDecider } from '../../machines/chat/outbox.js';
import { isConversationEnded } from '../../machines/chat/conversation.js';
import { windowToArray } from '../../machines/core/window.js';
import type { IncomingEvent, ReplyBody } from '../../protocol/index.js';
import { deciderSpecification, type Then } from '../support/decider.js';

const S = 's1';
const U1 = '11111111-1111-4111-8111-111111111111';
const U2 = '22222222-2222-4222-8222-222222222222';
const CB = { url: 'http://127.0.0.1:9/cb', token: 'cb-token' };
const LIMITS = { memoryMaxEntries: 200, memoryMaxChars: 1024 * 1024, taskIdWindow: 1024 };
const decider = conversationDecider(LIMITS);

/** Where the queued replies go, as the outbox follows the callbacks the log advertised. */
function callbacksOf(h: Harness): Array<[number, string]> {
  const outboxEvents = h.log.filter((e): e is MessageReceived | ReplyQueued => e.type === 'message.received' || e.type === 'reply.queued');
  return [...foldEvents(outboxDecider, outboxEvents).queue.values()].map((d) => [d.context.delivery.n, d.context.callback.url]);
}

/** One conversation as the engine drives it, given → when → then: decide against the fold of the log so far, then fold what was decided. */
class Harness {
  conversation: ConversationState = decider.initialState;
  readonly log: ConversationEvent[] = [];

  run(command: SessionCommand): Decision<ConversationEvent, Outcome> {
    return this.when(command).decision;
  }

  when(command: SessionCommand): Then<ConversationEvent, Outcome> {
    const then = deciderSpecification(decider).given(this.log).when(command);
    this.conversation = foldEvents(decider, then.decision.events, this.conversation);
    this.log.push(...then.decision.events);
    return then;
  }

  get context() {
    return this.conversation!.context;
  }

  get queued(): ReplyQueued[] {
    return this.log.filter((e): e is ReplyQueued => e.type === 'reply.queued');
  }
}

const incoming = (task_id: string, text: string, at: number, extra: Partial<IncomingEvent> = { callback: CB }): SessionCommand => ({
  type: 'incoming',
  event: { session_id: S, task_id, text, ...extra },
  generation: 'g1',
  at,
});
const reply = (task_id: string, body: Partial<ReplyBody> & { status: ReplyBody['status'] }, at: number): SessionCommand => ({
  type: 'reply',
  session_id: S,
  task_id,
  reply: { session_id: S, task_id, ...body } as ReplyBody,
  epoch: 'e1',
  at,
});
const say = (task_id: string, text: string, at: number) =>
  reply(task_id, { status: 'message', message_id: `m-${text}`, reply_text: text }, at);
const expire = (at: number, idleTtlMs: number): SessionCommand => ({ type: 'expire', session_id: S, idleTtlMs, epoch: 'e1', at });

describe('the conversation (Form B, 3.2)', () => {
  it('a user message opens the conversation with its callback; the first one must carry a callback', () => {
    const h = new Harness();
    h.when(incoming(U1, 'hi', 10, {})).thenNothing('callback_required');
    expect(h.run(incoming(U1, 'hi', 10)).outcome).toBe('accepted');
    expect(h.log.map((e) => e.type)).toEqual(['session.opened', 'message.received']);
    expect(h.log[0]).toMatchObject({ form: 'B' });
    expect([h.context.callback, [...h.context.running]]).toEqual([CB, [U1]]);
    expect(h.run(incoming(U2, 'again', 20, {})).outcome).toBe('accepted');
  });

  it('several messages for one user message, in order, each queued as the next delivery; nothing closes', () => {
    const h = new Harness();
    h.run(incoming(U1, 'hi', 10));
    for (const [i, text] of ['one', 'two', 'three'].entries()) expect(h.run(say(U1, text, 20 + i)).outcome).toBe('queued');
    expect(h.queued.map((e) => [e.delivery.n, e.delivery.task_id, e.reply.status === 'message' && e.reply.reply_text])).toEqual([
      [1, U1, 'one'],
      [2, U1, 'two'],
      [3, U1, 'three'],
    ]);
    expect(h.conversation!.value).toBe('open');
  });

  it('a message with no user message before it goes out on its own path', () => {
    const h = new Harness();
    h.run(incoming(U1, 'hi', 10));
    h.run({ type: 'finish', session_id: S, task_id: U1, failed: false, epoch: 'e1', at: 11 });
    expect(h.run(say(U2, 'by the way', 50)).outcome).toBe('queued');
    expect(h.queued.at(-1)).toMatchObject({ delivery: { n: 1, task_id: U2 }, cause: 'agent' });
    expect(callbacksOf(h)).toEqual([[1, CB.url]]);
  });

  it('a callback advertised again is not logged again', () => {
    const h = new Harness();
    h.run(incoming(U1, 'hi', 10));
    h.run(incoming(U2, 'same place', 20));
    expect(h.log.filter((e) => e.type === 'message.received').map((e) => e.callback)).toEqual([CB, undefined]);
  });

  it('replies go to the latest callback advertised', () => {
    const h = new Harness();
    h.run(incoming(U1, 'hi', 10));
    const moved = { url: 'http://127.0.0.1:10/cb', token: 'new' };
    h.run(incoming(U2, 'moved', 20, { callback: moved }));
    h.run(say(U2, 'answer', 30));
    expect(callbacksOf(h)).toEqual([[1, moved.url]]);
  });

  it('typing is scoped to its user message and resets the inactivity timer', () => {
    const h = new Harness();
    h.run(incoming(U1, 'hi', 10));
    h.run(reply(U1, { status: 'typing', label: 'thinking' }, 5_000));
    expect(h.queued.at(-1)!.reply).toMatchObject({ status: 'typing', user_message_id: U1 });
    expect(h.context.lastActivityAt).toBe(5_000);
  });

  it('a slow multi-step turn is not killed: activity keeps moving the idle deadline', () => {
    const h = new Harness();
    const ttl = 1_000;
    h.run(incoming(U1, 'long job', 0));
    for (let at = 900; at <= 9_000; at += 900) {
      h.when(expire(at, ttl)).thenNothing('unchanged');
      h.run(reply(U1, { status: 'typing', label: `step ${at}` }, at));
    }
    h.run(say(U1, 'done at last', 9_500));
    expect(isConversationEnded(h.conversation!)).toBe(false);
    h.when(expire(10_499, ttl)).thenNothing('unchanged');
    expect(h.run(expire(10_500, ttl)).outcome).toBe('ended');
  });

  it('older statuses (completed, silent, tool_call) are carried through unchanged', () => {
    const h = new Harness();
    h.run(incoming(U1, 'hi', 10));
    h.run(reply(U1, { status: 'tool_call', label: 'search' }, 11));
    h.run(reply(U1, { status: 'completed' }, 12));
    h.run(reply(U1, { status: 'silent' }, 13));
    expect(h.queued.map((e) => e.reply.status)).toEqual(['tool_call', 'completed', 'silent']);
  });

  it('memory holds user and assistant messages in order', () => {
    const h = new Harness();
    h.run(incoming(U1, 'hi', 10));
    h.run(say(U1, 'hello', 11));
    h.run(say(U1, 'anything else?', 12));
    expect(windowToArray(h.context.memory).map((m) => [m.role, m.text])).toEqual([
      ['user', 'hi'],
      ['assistant', 'hello'],
      ['assistant', 'anything else?'],
    ]);
  });

  it('a failed run shows an error; a restart interrupts runs that had not finished', () => {
    const h = new Harness();
    h.run(incoming(U1, 'a', 10));
    h.run(incoming(U2, 'b', 11));
    h.run({ type: 'finish', session_id: S, task_id: U1, failed: true, epoch: 'e1', at: 12 });
    expect(h.queued.at(-1)).toMatchObject({ cause: 'agent_error', reply: { status: 'errored', error_code: 'agent_error' } });
    h.run({ type: 'interrupt', session_id: S, epoch: 'e2', at: 20 });
    expect(h.queued.at(-1)).toMatchObject({ cause: 'interrupted', delivery: { task_id: U2 }, reply: { error_code: 'interrupted' } });
    expect([...h.context.running]).toEqual([]);
  });

  it('while it is open nothing is dropped: what the agent says after its run ended is queued too (the model-based test found the open state taking a drop no decision makes)', () => {
    const h = new Harness();
    h.run(incoming(U1, 'hi', 10));
    h.run({ type: 'finish', session_id: S, task_id: U1, failed: false, epoch: 'e1', at: 11 });
    expect(h.run(say(U1, 'one more thing', 12))).toMatchObject({ outcome: 'queued', events: [{ type: 'reply.queued' }] });
  });

  it('a retried user message is a duplicate; after the end, messages are ignored and replies dropped', () => {
    const h = new Harness();
    h.run(incoming(U1, 'hi', 10));
    expect(h.run(incoming(U1, 'hi', 11))).toEqual({ events: [], outcome: 'duplicate' });
    h.run({ type: 'end', session_id: S, reason: 'client', epoch: 'e1', at: 12 });
    expect(h.run(incoming(U2, 'late', 13)).outcome).toBe('session_ended');
    expect(h.run(say(U1, 'late', 14))).toMatchObject({ outcome: 'dropped', events: [{ type: 'reply.dropped', reason: 'session_ended' }] });
  });

  it('a reply over 256 KiB is replaced by errored/reply_too_large', () => {
    const h = new Harness();
    h.run(incoming(U1, 'hi', 10));
    h.run(say(U1, 'x'.repeat(256 * 1024), 11));
    expect(h.queued.at(-1)).toMatchObject({ cause: 'reply_too_large', reply: { status: 'errored', error_code: 'reply_too_large' } });
  });
});
