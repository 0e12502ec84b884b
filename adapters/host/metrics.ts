/**
 * The assistant host's metrics (`/metrics`, docs/operating.md "Metrics"): sessions open, tasks pending,
 * readers and callback deliveries queued read from the engine's fold when scraped; replies and callback
 * deliveries counted from committed events, an increment of a plain number each, so that a turn pays
 * nothing more.
 */
import type { Registry } from 'prom-client';
import type { DomainEvent } from '../../machines/chat/events.js';
import type { ChatEngine, ChatGauges } from '../../engine/chat/engine.js';
import { onceAScrape, scraped } from '../http/metrics.js';

/** What the host committed, counted per event: plain numbers, read when scraped. */
interface Tally {
  progress: number;
  terminal: number;
  message: number;
  succeeded: number;
  failed: number;
  abandoned: number;
}

export function observeHost(registry: Registry, engine: ChatEngine): void {
  const tally: Tally = { progress: 0, terminal: 0, message: 0, succeeded: 0, failed: 0, abandoned: 0 };
  engine.subscribeEvents((event) => count(tally, event));
  const gauges = onceAScrape<ChatGauges>(() => engine.gauges());
  scraped(registry, {
    kind: 'gauge',
    name: 'sessions_open',
    help: 'Sessions of either form not ended.',
    read: () => gauges().sessionsOpen,
  });
  scraped(registry, {
    kind: 'gauge',
    name: 'tasks_pending',
    help: 'Form A tasks not settled, and Form B user messages whose agent run has not finished.',
    read: () => gauges().tasksPending,
  });
  scraped(registry, {
    kind: 'gauge',
    name: 'streams_open',
    label: 'kind',
    help: "Streams (SSE) open, by kind: a session's reply stream (a reader).",
    read: () => ({ replies: gauges().readers }),
  });
  scraped(registry, {
    kind: 'counter',
    name: 'replies_total',
    label: 'kind',
    help: "Replies committed, by kind: a task's progress, a task's terminal reply (on its stream or for its callback), a Form B message for the callback.",
    read: () => ({ progress: tally.progress, terminal: tally.terminal, message: tally.message }),
  });
  scraped(registry, {
    kind: 'counter',
    name: 'callback_deliveries_total',
    label: 'outcome',
    help: 'Callback delivery outcomes: an attempt succeeded, an attempt failed (retried later), a delivery abandoned.',
    read: () => ({ succeeded: tally.succeeded, failed: tally.failed, abandoned: tally.abandoned }),
  });
  scraped(registry, {
    kind: 'gauge',
    name: 'callback_deliveries_queued',
    help: 'Callback deliveries waiting in the outboxes (the head of each possibly in flight).',
    read: () => gauges().deliveriesQueued,
  });
}

function count(tally: Tally, event: DomainEvent): void {
  switch (event.type) {
    case 'task.progressed':
      tally.progress += 1;
      return;
    case 'task.settled':
      tally.terminal += 1;
      return;
    case 'reply.queued':
      tally.message += 1;
      return;
    case 'delivery.succeeded':
      tally.succeeded += 1;
      return;
    case 'delivery.failed':
      tally.failed += 1;
      return;
    case 'delivery.abandoned':
      tally.abandoned += 1;
      return;
    default:
      // Nothing else is counted.
      return;
  }
}
