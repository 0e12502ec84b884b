/**
 * A session's outbox, and its decider: its callback deliveries not yet succeeded or abandoned, in the order
 * they were queued. Only the head is ever attempted, so a later reply is never POSTed before an earlier one
 * is delivered or abandoned (4.3). Finished deliveries leave the outbox and are counted.
 *
 * Queued progress (Form A's `typing` and `tool_call`, Form B's `typing`) is coalesced by task, as on the
 * stream (4.2 rule 4): once a reply is queued for a task, that task's progress waiting behind the head
 * (queued while an earlier delivery was on its way) is superseded, logged as such, and leaves the outbox
 * unsent and uncounted, so a slow receiver gets the latest `typing`, not every one. The head itself is never superseded: it is what goes out next, as a
 * frame already written would.
 */
import { callbackBody, type CallbackBlock } from '../../protocol/index.js';
import type { Decider, Decision } from '../core/decider.js';
import { decideDelivery, evolveDelivery, initialDelivery, type CallbackOutcome, type DeliverySnapshot } from './delivery.js';
import {
  isDeliveryEvent,
  type Delivery,
  type DeliveryEvent,
  type MessageReceived,
  type ReplyQueued,
  type SessionEnded,
  type TaskProgressed,
  type TaskSettled,
  type TaskStarted,
} from './events.js';

export interface Outbox {
  /** By delivery number, oldest first. */
  readonly queue: ReadonlyMap<number, DeliverySnapshot>;
  readonly succeeded: number;
  readonly abandoned: number;
  /** The session's latest callback: where a reply queued now goes, unless its task named its own. */
  readonly callback: CallbackBlock | undefined;
  /** Form A: the callback each task with one named, until its terminal reply is queued. */
  readonly taskCallbacks: ReadonlyMap<string, CallbackBlock>;
}

/** An event that may queue a reply: it does when it carries a `delivery`. */
export type QueuingEvent = TaskProgressed | TaskSettled | ReplyQueued;

/** A user message, which may advertise a callback (logged once per session: see `Delivery`). */
export type AdvertisingEvent = TaskStarted | MessageReceived;

export type OutboxEvent = AdvertisingEvent | SessionEnded | QueuingEvent | DeliveryEvent;

export type OutboxCommand =
  /** Attempt the head, if it is due. */
  | { readonly type: 'attempt'; readonly at: number }
  /** What the transport reported for attempt of delivery `n`. */
  | { readonly type: 'outcome'; readonly n: number; readonly outcome: CallbackOutcome; readonly at: number }
  /** A restart: the head's attempt in flight, if any, was cut off. */
  | { readonly type: 'interrupt'; readonly at: number }
  /** The client said the session ended: everything waiting is given up. */
  | { readonly type: 'abandon'; readonly at: number }
  /** Delivery `n` was queued: the progress of its task waiting behind the head is stale. */
  | { readonly type: 'coalesce'; readonly n: number; readonly at: number };

/** `session_ended`: the receiver answered `{ok: true, ignored: true, reason: "session_ended"}` (4.2). */
export type OutboxOutcome = 'recorded' | 'unchanged' | 'session_ended';

export const emptyOutbox: Outbox = { queue: new Map(), succeeded: 0, abandoned: 0, callback: undefined, taskCallbacks: new Map() };

/** Follows the callbacks the session's user messages advertise. */
function advertised(outbox: Outbox, event: AdvertisingEvent): Outbox {
  const callback = event.callback ?? outbox.callback;
  if (event.type === 'message.received') return event.callback === undefined ? outbox : { ...outbox, callback };
  // Form A: a task that named a callback (a new one, or the latest again) has its replies go there.
  const named = event.callback !== undefined || event.same_callback === true;
  if (!named || callback === undefined) return outbox;
  return { ...outbox, callback, taskCallbacks: new Map(outbox.taskCallbacks).set(event.task_id, callback) };
}

/** An ended session queues nothing new: its callbacks go (what is queued keeps its own). */
function forgetCallbacks(outbox: Outbox): Outbox {
  return outbox.callback === undefined && outbox.taskCallbacks.size === 0
    ? outbox
    : { ...outbox, callback: undefined, taskCallbacks: new Map() };
}

/** Where a queued reply goes: as its event says (older logs), its task's callback, or the session's latest. */
function callbackOf(outbox: Outbox, event: QueuingEvent, delivery: Delivery): CallbackBlock {
  if (delivery.url !== undefined && delivery.token !== undefined) return { url: delivery.url, token: delivery.token };
  const callback = outbox.taskCallbacks.get(delivery.task_id) ?? outbox.callback;
  if (callback === undefined)
    throw new Error(`event log: ${event.type} in ${event.session_id} queues a reply before any callback was advertised`);
  return callback;
}

function enqueue(outbox: Outbox, event: QueuingEvent): Outbox {
  const { delivery } = event;
  if (delivery === undefined) return outbox;
  const queue = new Map(outbox.queue);
  // Live progress: Form A's (`typing`, `tool_call`: 4.2 rule 4) and Form B's `typing`. An older Form B
  // agent's `tool_call` is a one-shot reply (2.5), carried through like `completed` and `silent` (3b.4).
  const progress = event.type === 'task.progressed' || event.reply.status === 'typing';
  const callback = callbackOf(outbox, event, delivery);
  const entry = initialDelivery({
    session_id: event.session_id,
    delivery,
    callback,
    body: callbackBody(event.reply),
    progress,
    at: event.at,
  });
  queue.set(delivery.n, entry);
  if (event.type !== 'task.settled') return { ...outbox, queue };
  // A settled task queues nothing more: its own callback is no longer needed.
  const taskCallbacks = new Map(outbox.taskCallbacks);
  taskCallbacks.delete(event.task_id);
  return { ...outbox, queue, taskCallbacks };
}

function step(outbox: Outbox, event: DeliveryEvent): Outbox {
  const entry = outbox.queue.get(event.n);
  if (entry === undefined) throw new Error(`event log: ${event.type} for delivery ${event.n} not in ${event.session_id}'s outbox`);
  const next = evolveDelivery(entry, event);
  const queue = new Map(outbox.queue);
  if (next.status === 'active') return { ...outbox, queue: queue.set(event.n, next) };
  queue.delete(event.n);
  if (next.value === 'succeeded') return { ...outbox, queue, succeeded: outbox.succeeded + 1 };
  // Superseded progress was only ever live: neither delivered nor given up.
  return next.value === 'abandoned' ? { ...outbox, queue, abandoned: outbox.abandoned + 1 } : { ...outbox, queue };
}

/** The delivery that goes next (or is in flight). */
export function head(outbox: Outbox): DeliverySnapshot | undefined {
  return outbox.queue.values().next().value;
}

function recorded(events: DeliveryEvent[], outcome: OutboxOutcome = 'recorded'): Decision<DeliveryEvent, OutboxOutcome> {
  return events.length === 0 ? { events, outcome: 'unchanged' } : { events, outcome };
}

function decide(command: OutboxCommand, outbox: Outbox): Decision<DeliveryEvent, OutboxOutcome> {
  switch (command.type) {
    case 'attempt':
    case 'interrupt': {
      const first = head(outbox);
      return recorded(first === undefined ? [] : decideDelivery(command, first));
    }
    case 'outcome': {
      const delivery = outbox.queue.get(command.n);
      const events = delivery === undefined ? [] : decideDelivery(command, delivery);
      const ended = command.outcome.kind === 'answered' && command.outcome.sessionEnded && events[0]?.type === 'delivery.succeeded';
      return recorded(events, ended ? 'session_ended' : 'recorded');
    }
    case 'abandon':
      return recorded([...outbox.queue.values()].flatMap((delivery) => decideDelivery(command, delivery)));
    case 'coalesce': {
      const newer = outbox.queue.get(command.n);
      if (newer === undefined) return recorded([]);
      const first = head(outbox);
      const stale = [...outbox.queue.values()].filter(
        (queued) =>
          queued !== first && queued.context.delivery.n < command.n && queued.context.delivery.task_id === newer.context.delivery.task_id,
      );
      return recorded(stale.flatMap((queued) => decideDelivery({ type: 'supersede', by: command.n, at: command.at }, queued)));
    }
  }
}

export const outboxDecider: Decider<Outbox, OutboxCommand, OutboxEvent, OutboxOutcome, DeliveryEvent> = {
  decide,
  evolve(outbox, event) {
    if (isDeliveryEvent(event)) return step(outbox, event);
    if (event.type === 'session.ended') return forgetCallbacks(outbox);
    return event.type === 'task.started' || event.type === 'message.received' ? advertised(outbox, event) : enqueue(outbox, event);
  },
  initialState: emptyOutbox,
};
