/**
 * A load generator process: the bench (bench/run.ts) starts one or more per contender, each holding
 * some of the contender's sessions, and tells it over IPC what to do. Sessions run closed loops of echo
 * turns (a session sends its next turn when the last one's reply is read) for the time it is told; it
 * answers with the turns it finished, their latencies (send to final reply read) and its own CPU time,
 * so the bench can tell when the generator, not the server, is the bound.
 *
 *   parent → { type: 'open', client, base, sessions }   child → { type: 'opened' }
 *   parent → { type: 'run', ms, measure }                child → { type: 'ran', turns, latencies, cpuMs, wallMs }
 *   parent → { type: 'idle', client, base, streams }     child → { type: 'held', streams }
 *   parent → { type: 'release' }                         child → { type: 'released' } (its sessions closed, ready for more)
 *   parent → { type: 'close' }                           child exits
 * Any failure: child → { type: 'failed', message } (a wrong reply is a failure, not a slow turn).
 */
import { performance } from 'node:perf_hooks';
import { clientExport, type ClientRef } from './clients/ref.js';
import type { OpenSession, TurnSession } from './clients/turn.js';

export type ToLoad =
  | { readonly type: 'open'; readonly client: ClientRef; readonly base: string; readonly sessions: number }
  | { readonly type: 'run'; readonly ms: number; readonly measure: boolean }
  | { readonly type: 'idle'; readonly client: ClientRef; readonly base: string; readonly streams: number }
  | { readonly type: 'release' }
  | { readonly type: 'close' };

export type FromLoad =
  | { readonly type: 'opened' }
  | { readonly type: 'ran'; readonly turns: number; readonly latencies: number[]; readonly cpuMs: number; readonly wallMs: number }
  | { readonly type: 'held'; readonly streams: number }
  | { readonly type: 'released' }
  | { readonly type: 'failed'; readonly message: string };

/** A turn unfinished after this long fails the run rather than hang it. */
const TURN_TIMEOUT_MS = 15_000;

const send = (message: FromLoad) => process.send!(message);
let sessions: TurnSession[] = [];
const idle: Array<() => void> = [];

/** Opens in waves, so that a thousand sessions do not all knock at once. */
async function inWaves<T>(count: number, open: (index: number) => Promise<T>): Promise<T[]> {
  const opened: T[] = [];
  for (let from = 0; from < count; from += 100)
    opened.push(...(await Promise.all(Array.from({ length: Math.min(100, count - from) }, (_, i) => open(from + i)))));
  return opened;
}

function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what} unfinished after ${TURN_TIMEOUT_MS} ms`)), TURN_TIMEOUT_MS)),
  );
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

async function run(ms: number, measure: boolean): Promise<FromLoad> {
  const latencies: number[] = [];
  const cpu = process.cpuUsage();
  const started = performance.now();
  const end = started + ms;
  let turns = 0;
  await Promise.all(
    sessions.map(async (session, index) => {
      for (let n = 0; performance.now() < end; n += 1) {
        const sent = performance.now();
        await withTimeout(session.turn(`hello ${index} ${n}`), `session ${index}'s turn`);
        turns += 1;
        if (measure) latencies.push(performance.now() - sent);
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  return { type: 'ran', turns, latencies, cpuMs: (used.user + used.system) / 1000, wallMs: performance.now() - started };
}

async function release(): Promise<void> {
  for (const close of idle.splice(0)) close();
  await Promise.allSettled(sessions.map((session) => session.close()));
  sessions = [];
}

async function handle(message: ToLoad): Promise<void> {
  switch (message.type) {
    case 'open': {
      const open = await clientExport<OpenSession>(message.client);
      sessions = await inWaves(message.sessions, (index) => open(message.base, index));
      send({ type: 'opened' });
      return;
    }
    case 'run':
      send(await run(message.ms, message.measure));
      return;
    case 'idle': {
      const openIdle = await clientExport<(base: string, index: number) => Promise<() => void>>(message.client);
      idle.push(...(await inWaves(message.streams, (index) => openIdle(message.base, index))));
      send({ type: 'held', streams: idle.length });
      return;
    }
    case 'release':
      await release();
      send({ type: 'released' });
      return;
    case 'close':
      await release();
      process.exit(0);
  }
}

process.on('message', (message: ToLoad) => {
  handle(message).catch((error: unknown) => {
    send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
  });
});
process.on('disconnect', () => process.exit(0));
