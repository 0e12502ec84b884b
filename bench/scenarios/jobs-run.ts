/**
 * The reasoning channel: jobs per second from a client's create to its reading the result, and the
 * latency of each, at 1 and at 100 concurrent jobs, with the CPU per job of the server (the backend
 * nodes together) and of the plugin. The relay's setups are jobs.ts's (the real plugin, `builtin`
 * reasoner, a process of its own); the baselines are jobs-baselines.ts's (a minimal plugin in the bench
 * process, whose CPU is not counted: the server's is what is compared). Each concurrency runs a warm-up
 * unmeasured, then `rounds` measured slices, in closed loops; setups run one after the other.
 */
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { CLI, scratchDir } from '../contenders.js';
import { percentile, processCpuMs } from '../lib.js';
import { spread, type JobsRow } from '../results.js';
import { BASELINE_SETUPS, isBaseline, openBaseline, type BaselineSetup } from './jobs-baselines.js';
import { oneJob, openRelay, STARTING_POINT_SETUP, type Channel, type RelaySetup } from './jobs.js';

export type JobsSetup = RelaySetup | BaselineSetup;

/** Every setup of a run but the starting point (a whole run's, built from git). */
export const JOBS_SETUPS: readonly JobsSetup[] = [
  'embedded',
  'embedded, BYO',
  'postgres, 1 node',
  'postgres, 1 node, BYO',
  'postgres, 3 nodes',
  ...BASELINE_SETUPS,
];
export { STARTING_POINT_SETUP };

export interface JobsOptions {
  readonly setups: readonly JobsSetup[];
  readonly concurrency: readonly number[];
  readonly warmupMs: number;
  readonly sliceMs: number;
  readonly rounds: number;
  /** The starting point's built CLI, for its setup. */
  readonly startingPointCli?: string;
}

/** Closed loops of `concurrency` jobs for `ms`; the jobs finished inside, and their latencies. */
async function slice(channel: Channel, concurrency: number, ms: number): Promise<{ perSecond: number; latencies: number[] }> {
  const latencies: number[] = [];
  const end = performance.now() + ms;
  const from = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) latencies.push(await oneJob(channel));
    }),
  );
  return { perSecond: (latencies.length * 1000) / (performance.now() - from), latencies };
}

/** CPU milliseconds so far of the server processes together, and of the plugin's (when it has one). */
const cpuOf = (channel: Channel) => ({
  server: channel.servers.reduce((sum, server) => sum + (processCpuMs(server.child.pid!) ?? Number.NaN), 0),
  plugin: channel.pluginPid === undefined ? Number.NaN : (processCpuMs(channel.pluginPid) ?? Number.NaN),
});

export async function jobs(options: JobsOptions): Promise<JobsRow[]> {
  const rows: JobsRow[] = [];
  for (const setup of options.setups) rows.push(...(await jobsOf(setup, options)));
  return rows;
}

async function jobsOf(setup: JobsSetup, options: JobsOptions): Promise<JobsRow[]> {
  const dir = scratchDir();
  const cli = setup === STARTING_POINT_SETUP ? options.startingPointCli : CLI;
  if (cli === undefined) throw new Error(`${setup}: no starting point was built`);
  const channel = isBaseline(setup) ? await openBaseline(setup, dir) : await openRelay(setup, dir, cli);
  try {
    const rows: JobsRow[] = [];
    let measured = 0;
    for (const concurrency of options.concurrency) {
      await slice(channel, concurrency, options.warmupMs);
      const rates: number[] = [];
      const latencies: number[] = [];
      const before = cpuOf(channel);
      for (let round = 0; round < options.rounds; round += 1) {
        const ran = await slice(channel, concurrency, options.sliceMs);
        rates.push(ran.perSecond);
        latencies.push(...ran.latencies);
      }
      const after = cpuOf(channel);
      measured += latencies.length;
      const sorted = Float64Array.from(latencies).sort();
      const perJob = (ms: number) => (latencies.length === 0 || !Number.isFinite(ms) ? undefined : (1000 * ms) / latencies.length);
      const server = perJob(after.server - before.server);
      const plugin = perJob(after.plugin - before.plugin);
      rows.push({
        setup,
        concurrency,
        jobsPerSecond: spread(rates),
        p50Ms: percentile(sorted, 50),
        p99Ms: percentile(sorted, 99),
        ...(server === undefined ? {} : { serverCpuUsPerJob: server }),
        ...(plugin === undefined ? {} : { pluginCpuUsPerJob: plugin }),
      });
    }
    await channel.finish(measured);
    return rows;
  } finally {
    await channel.remove();
    rmSync(dir, { recursive: true, force: true });
  }
}
