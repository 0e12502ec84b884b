/**
 * Turns: at 1, 10, 100 and 1,000 concurrent sessions, each contender's sessions run closed loops of
 * echo turns. Every contender's sessions are opened first; then the measured time is cut into rounds,
 * and in each round every contender runs one slice in turn (the order reversed every other round), so
 * that whatever else the machine does weighs on all alike. One session is the latency scenario: its
 * turns are sequential, and their send-to-reply times are the turn latency.
 */
import type { Contender, Running } from '../contenders.js';
import { Generator } from '../generators.js';
import { percentile, processCpuMs } from '../lib.js';
import { spread, type Spread } from '../results.js';

export interface TurnsOptions {
  readonly rounds: number;
  readonly sliceMs: number;
  readonly warmupMs: number;
}

export interface TurnsSample {
  readonly contender: Contender;
  /** Median over rounds of the turns a second, with the rounds' least and most. */
  readonly turnsPerSecond: Spread;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The server's own CPU time (user and system) per turn, µs: the figure noise disturbs least. */
  readonly serverCpuUs: number;
  /** The busiest generator's CPU, percent of a core: near 100, the generator is the bound. */
  readonly generatorCpuPercent: number;
  readonly generators: number;
  /** Why the contender has no figures: its replies were wrong, or it failed. */
  readonly failed?: string;
}

/** One generator holds up to this many sessions; more sessions, more generators. */
const SESSIONS_PER_GENERATOR = 250;
/** Past one session, one generator process was the bound of the floor (94% of a core at 10): two share the load. */
const generatorsFor = (sessions: number) => (sessions === 1 ? 1 : Math.max(2, Math.ceil(sessions / SESSIONS_PER_GENERATOR)));

interface Entry {
  readonly contender: Contender;
  readonly running: Running;
  readonly generators: Generator[];
  readonly perRound: number[];
  readonly latencies: number[];
  turns: number;
  serverCpuMs: number;
  generatorCpuPercent: number;
  failed?: string;
}

async function slice(entry: Entry, ms: number, measure: boolean): Promise<void> {
  const pid = entry.running.child.child.pid!;
  const before = processCpuMs(pid) ?? 0;
  const ran = await Promise.all(entry.generators.map((generator) => generator.run(ms, measure)));
  const after = processCpuMs(pid) ?? 0;
  if (!measure) return;
  const turns = ran.reduce((sum, each) => sum + each.turns, 0);
  const wallMs = Math.max(...ran.map((each) => each.wallMs));
  entry.turns += turns;
  entry.serverCpuMs += after - before;
  entry.perRound.push((turns * 1000) / wallMs);
  for (const each of ran) entry.latencies.push(...each.latencies);
  entry.generatorCpuPercent = Math.max(entry.generatorCpuPercent, ...ran.map((each) => (100 * each.cpuMs) / each.wallMs));
}

/** Each contender's generators, kept across session counts (a process starts in about a second). */
type Pools = Map<Contender, Generator[]>;

function generatorsOf(pools: Pools, contender: Contender, count: number): Generator[] {
  const pool = pools.get(contender) ?? [];
  while (pool.length < count) pool.push(new Generator(`${contender.label}, generator ${pool.length + 1}`));
  pools.set(contender, pool);
  return pool.slice(0, count);
}

async function level(
  contenders: readonly Contender[],
  running: ReadonlyMap<string, Running>,
  sessions: number,
  options: TurnsOptions,
  pools: Pools,
): Promise<TurnsSample[]> {
  const count = generatorsFor(sessions);
  const entries: Entry[] = contenders.flatMap((contender) => {
    const server = running.get(contender.server.name);
    return server === undefined
      ? []
      : [
          {
            contender,
            running: server,
            generators: generatorsOf(pools, contender, count),
            perRound: [],
            latencies: [],
            turns: 0,
            serverCpuMs: 0,
            generatorCpuPercent: 0,
          },
        ];
  });
  await Promise.all(
    entries.map(async (entry) => {
      try {
        await Promise.all(
          entry.generators.map((generator, i) =>
            generator.open(entry.contender.ref, entry.running.base, Math.floor(sessions / count) + (i < sessions % count ? 1 : 0)),
          ),
        );
      } catch (error) {
        entry.failed = (error as Error).message;
      }
    }),
  );
  const live = () => entries.filter((entry) => entry.failed === undefined);
  const attempt = async (entry: Entry, ms: number, measure: boolean) => {
    try {
      await slice(entry, ms, measure);
    } catch (error) {
      entry.failed = (error as Error).message;
    }
  };
  for (const entry of live()) await attempt(entry, options.warmupMs, false);
  for (let round = 0; round < options.rounds; round += 1) {
    const order = round % 2 === 0 ? live() : live().reverse();
    for (const entry of order) await attempt(entry, options.sliceMs, true);
  }
  await Promise.all(entries.flatMap((entry) => entry.generators.map((generator) => generator.release().catch(() => undefined))));
  return entries.map((entry) => {
    const sorted = Float64Array.from(entry.latencies).sort();
    return {
      contender: entry.contender,
      turnsPerSecond: spread(entry.perRound),
      p50Ms: percentile(sorted, 50),
      p99Ms: percentile(sorted, 99),
      serverCpuUs: entry.turns === 0 ? Number.NaN : (1000 * entry.serverCpuMs) / entry.turns,
      generatorCpuPercent: entry.generatorCpuPercent,
      generators: entry.generators.length,
      ...(entry.failed === undefined ? {} : { failed: entry.failed }),
    };
  });
}

/** Every session count in turn, each with every contender's sessions opened first. */
export async function turns(
  contenders: readonly Contender[],
  running: ReadonlyMap<string, Running>,
  levels: readonly number[],
  options: TurnsOptions,
): Promise<Array<{ sessions: number; samples: TurnsSample[] }>> {
  const pools: Pools = new Map();
  try {
    const results = [];
    for (const sessions of levels) {
      results.push({ sessions, samples: await level(contenders, running, sessions, options, pools) });
      console.log(`bench: turns at ${sessions} session${sessions > 1 ? 's' : ''} done`);
    }
    return results;
  } finally {
    await Promise.all([...pools.values()].flat().map((generator) => generator.close()));
  }
}
