/**
 * The log: events appended to the SQLite event log a second, in a durable file (WAL, `synchronous=NORMAL`,
 * the host's default). One a commit: each append awaited before the next, so each is a transaction of its
 * own, as a quiet host's turn is. Batched: a hundred appended at once, committed together, as a busy
 * host's turn is. The events are a host's own (a message, its progress, its reply), decided as the host
 * decides them.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULT_SESSION_LIMITS } from '../../engine/chat/config.js';
import { ChatProjection } from '../../engine/chat/projection.js';
import { streamOf, type DomainEvent } from '../../machines/chat/events.js';
import { EventLog } from '../../storage/event-log.js';
import { scratchDir } from '../contenders.js';
import { spread, type LogRow } from '../results.js';

export interface LogOptions {
  readonly sliceMs: number;
  readonly rounds: number;
}

/** A supply of a host's events: turns of a few sessions, each decided and folded as the engine would. */
function* hostEvents(): Generator<DomainEvent> {
  const projection = new ChatProjection(DEFAULT_SESSION_LIMITS);
  let at = Date.UTC(2026, 0, 1);
  for (let turn = 0; ; turn += 1) {
    const session_id = `s${turn % 16}`;
    const task_id = `t${turn}`;
    at += 1;
    const commands = [
      { type: 'incoming', event: { session_id, task_id, text: `question ${turn}` }, generation: `gen${turn % 16}`, at },
      {
        type: 'reply',
        session_id,
        task_id,
        reply: { session_id, task_id, status: 'typing', label: 'thinking' },
        epoch: 'benchepoch01',
        at,
      },
      {
        type: 'reply',
        session_id,
        task_id,
        reply: { session_id, task_id, status: 'message', message_id: `m${turn}`, reply_text: `answer ${turn}` },
        epoch: 'benchepoch01',
        at,
      },
    ] as const;
    for (const command of commands) {
      const { events } = projection.decide(command, 'A');
      for (const event of events) {
        projection.apply(event);
        yield event;
      }
    }
  }
}

async function rate(log: EventLog<DomainEvent>, supply: Iterator<DomainEvent>, batch: number, ms: number): Promise<number> {
  let appended = 0;
  const from = performance.now();
  while (performance.now() - from < ms) {
    const appends: Array<Promise<void>> = [];
    for (let i = 0; i < batch; i += 1) appends.push(log.append(supply.next().value as DomainEvent));
    await Promise.all(appends);
    appended += batch;
  }
  return (appended * 1000) / (performance.now() - from);
}

export async function logAppends(options: LogOptions): Promise<LogRow[]> {
  const dir = scratchDir();
  const log = EventLog.open<DomainEvent>({ path: join(dir, 'log.db'), streamOf });
  try {
    const supply = hostEvents();
    const modes = [
      { mode: 'one event a commit', batch: 1 },
      { mode: '100 events a commit', batch: 100 },
    ];
    const rates = modes.map(() => [] as number[]);
    for (let round = 0; round < options.rounds; round += 1) {
      for (const [i, { batch }] of modes.entries()) rates[i]!.push(await rate(log, supply, batch, options.sliceMs));
    }
    return modes.map(({ mode }, i) => ({ mode, eventsPerSecond: spread(rates[i]!) }));
  } finally {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
