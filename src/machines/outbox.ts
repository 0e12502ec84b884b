/**
 * A session's outbox: its callback deliveries not yet succeeded or abandoned, in the order they were
 * queued. Only the head is ever attempted, so a later reply is never POSTed before an earlier one is
 * delivered or abandoned (4.3). Finished deliveries leave the outbox and are counted.
 */
import { callbackBody, type ReplyBody } from '../protocol/index.js';
import { evolveDelivery, queuedDelivery, type DeliverySnapshot } from './delivery.js';
import type { Delivery, DeliveryEvent } from './events.js';

export interface Outbox {
  /** By delivery number, oldest first. */
  readonly queue: ReadonlyMap<number, DeliverySnapshot>;
  readonly succeeded: number;
  readonly abandoned: number;
}

export const EMPTY_OUTBOX: Outbox = { queue: new Map(), succeeded: 0, abandoned: 0 };

export function enqueue(outbox: Outbox, session_id: string, delivery: Delivery, reply: ReplyBody, at: number): Outbox {
  const entry = queuedDelivery({ session_id, delivery, body: callbackBody(reply), at });
  return { ...outbox, queue: new Map(outbox.queue).set(delivery.n, entry) };
}

export function evolveOutbox(outbox: Outbox, event: DeliveryEvent): Outbox {
  const entry = outbox.queue.get(event.n);
  if (entry === undefined) throw new Error(`event log: ${event.type} for delivery ${event.n} not in ${event.session_id}'s outbox`);
  const next = evolveDelivery(entry, event);
  const queue = new Map(outbox.queue);
  if (next.status === 'active') return { ...outbox, queue: queue.set(event.n, next) };
  queue.delete(event.n);
  return next.value === 'succeeded'
    ? { ...outbox, queue, succeeded: outbox.succeeded + 1 }
    : { ...outbox, queue, abandoned: outbox.abandoned + 1 };
}

/** The delivery that goes next (or is in flight). */
export function head(outbox: Outbox): DeliverySnapshot | undefined {
  return outbox.queue.values().next().value;
}
