/**
 * Idle streams: how much resident memory a server grows by for each open stream that carries nothing.
 * Each server is started fresh, its RSS read once it has settled, then load generators open the streams
 * (as many as the process's open-file limit allows: each is a socket at both ends), and its RSS is read
 * again once they are all open and it has settled.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { start, stop, type Server } from '../contenders.js';
import { Generator } from '../generators.js';
import { rssKiB } from '../lib.js';
import type { IdleRow } from '../results.js';

export interface IdleOptions {
  readonly streams: number;
  readonly settleMs: number;
}

/** One generator process holds at most this many streams (its own open-file limit is shared with the rest). */
const STREAMS_PER_GENERATOR = 5_000;

async function measure(server: Server, scratch: string, options: IdleOptions): Promise<IdleRow> {
  const running = await start(server, scratch);
  const generators = Array.from(
    { length: Math.ceil(options.streams / STREAMS_PER_GENERATOR) },
    (_, i) => new Generator(`${server.title} idle streams ${i + 1}`),
  );
  try {
    await sleep(options.settleMs);
    const pid = running.child.child.pid!;
    const before = rssKiB(pid);
    const share = Math.ceil(options.streams / generators.length);
    const held = await Promise.all(
      generators.map((generator, i) => generator.idle(server.idle!, running.base, Math.min(share, options.streams - i * share))),
    );
    const streams = held.reduce((sum, each) => sum + each.streams, 0);
    await sleep(options.settleMs);
    return { server: server.name, streams, kibPerStream: (rssKiB(pid) - before) / streams };
  } catch (error) {
    return { server: server.name, streams: options.streams, note: `failed: ${(error as Error).message.slice(0, 200)}` };
  } finally {
    await Promise.all(generators.map((generator) => generator.close()));
    await stop(running);
  }
}

/** Each server measured on its own, one after the other: the streams of one must not be opened while another's memory is read. */
export async function idle(servers: readonly Server[], scratch: string, options: IdleOptions): Promise<IdleRow[]> {
  const rows: IdleRow[] = [];
  for (const server of servers) if (server.idle !== undefined) rows.push(await measure(server, scratch, options));
  return rows;
}
