/**
 * Restart: how long a host takes to start on a log of 10^4, 10^5 and 10^6 events, with its snapshots and
 * without them (a 10^6-event start under 2 s with snapshots), and how many events a second `replay`
 * folds: the log read in one read transaction and every event folded through the host log's fold, which
 * says what each moved, as `replay` does before it prints.
 *
 * The logs are written the way a host writes them, without HTTP in the way: each turn is decided by the
 * chat projection's own deciders (an incoming message, a typing progress, a terminal message), its events
 * folded and appended in batches. `sessions` sessions share the turns, so the folded state is what a
 * busy host holds (a backlog per session), not one session's. A start is timed from `createAssistantHost`
 * to its resolution, which includes folding and the host's own start events; each log is started
 * `rounds` times each way, alternating.
 */
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createAssistantHost } from '../../adapters/host/host.js';
import { DEFAULT_SESSION_LIMITS } from '../../engine/chat/config.js';
import { ChatProjection } from '../../engine/chat/projection.js';
import type { SessionCommand } from '../../machines/chat/commands.js';
import { streamOf, type DomainEvent } from '../../machines/chat/events.js';
import { EventLog } from '../../storage/event-log.js';
import { LogReader } from '../../storage/log-reader.js';
import { foldsOf } from '../../engine/replay/log.js';
import { scratchDir } from '../contenders.js';
import { spread, type RestartRow } from '../results.js';

export interface RestartOptions {
  readonly sizes: readonly number[];
  readonly rounds: number;
  readonly sessions: number;
}

const EPOCH = 'benchepoch01';

/** Writes a host log of at least `size` events, each turn decided and folded as the engine would. */
export async function writeLog(path: string, size: number, sessions: number): Promise<number> {
  const log = EventLog.open<DomainEvent>({ path, streamOf });
  const projection = new ChatProjection(DEFAULT_SESSION_LIMITS);
  let at = Date.UTC(2026, 0, 1);
  // A host's log begins with its start, as every log a host writes does.
  await log.append({ type: 'host.started', epoch: EPOCH, form: 'A', limits: DEFAULT_SESSION_LIMITS, at });
  let written = 1;
  const run = (command: SessionCommand, batch: DomainEvent[]) => {
    const { events } = projection.decide(command, 'A');
    for (const event of events) projection.apply(event);
    batch.push(...events);
  };
  batch: for (let turn = 0; ; turn++) {
    const batch: DomainEvent[] = [];
    for (let s = 0; s < sessions; s++) {
      const session_id = `s${s}`;
      const task_id = `t${turn}`;
      at += 1;
      run({ type: 'incoming', event: { session_id, task_id, text: `question ${turn}` }, generation: `gen${s}`, at }, batch);
      run(
        { type: 'reply', session_id, task_id, reply: { session_id, task_id, status: 'typing', label: 'thinking' }, epoch: EPOCH, at },
        batch,
      );
      run(
        {
          type: 'reply',
          session_id,
          task_id,
          reply: { session_id, task_id, status: 'message', message_id: `m${turn}-${s}`, reply_text: `answer ${turn} for ${session_id}` },
          epoch: EPOCH,
          at,
        },
        batch,
      );
    }
    await Promise.all(batch.map((event) => log.append(event)));
    written += batch.length;
    if (written >= size) break batch;
  }
  await log.close();
  return written;
}

async function timedStart(db: string): Promise<number> {
  const started = performance.now();
  const host = await createAssistantHost({ db, token: 'bench-token-0123456789', agent: 'echo', retentionMs: Infinity });
  const ms = performance.now() - started;
  await host.close();
  return ms;
}

function withoutSnapshots(db: string, run: () => Promise<number>): Promise<number> {
  // Kept aside, and put back after: the start without them must fold everything, and may write its own.
  const conn = new Database(db);
  const kept = conn.prepare('SELECT * FROM snapshots').all() as Array<Record<string, unknown>>;
  conn.exec('DELETE FROM snapshots');
  conn.close();
  return run().finally(() => {
    const back = new Database(db);
    back.exec('DELETE FROM snapshots');
    const insert = back.prepare(
      'INSERT INTO snapshots (position, at, event_digest, digest, data) VALUES (@position, @at, @event_digest, @digest, @data)',
    );
    for (const row of kept) insert.run(row);
    back.close();
  });
}

/** Events per second of a replay's fold of the whole log (in this process: no start-up of the command). */
async function replayRate(db: string): Promise<number> {
  const reader = LogReader.open(db);
  try {
    return await reader.read({}, (view) => {
      const fold = foldsOf(view)!.fold();
      const started = performance.now();
      let folded = 0;
      for (const stored of view.events()) {
        fold.step(stored);
        folded += 1;
      }
      return folded / ((performance.now() - started) / 1000);
    });
  } finally {
    reader.close();
  }
}

export async function restart(options: RestartOptions): Promise<RestartRow[]> {
  const rows: RestartRow[] = [];
  for (const size of options.sizes) {
    const dir = scratchDir();
    try {
      const db = join(dir, 'relay.db');
      const events = await writeLog(db, size, options.sessions);
      // A first start folds everything and, at its clean close, takes the snapshot the timed starts use.
      await timedStart(db);
      const withSnapshot: number[] = [];
      const whole: number[] = [];
      for (let round = 0; round < options.rounds; round++) {
        withSnapshot.push(await timedStart(db));
        whole.push(await withoutSnapshots(db, () => timedStart(db)));
      }
      const rates: number[] = [];
      for (let round = 0; round < options.rounds; round++) rates.push(await replayRate(db));
      const replayPerSecond = spread(rates);
      rows.push(
        { events, snapshots: true, toServeMs: spread(withSnapshot), replayPerSecond },
        { events, snapshots: false, toServeMs: spread(whole), replayPerSecond },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return rows;
}
