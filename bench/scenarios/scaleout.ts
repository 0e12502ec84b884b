/**
 * Scale-out (issue 25): does adding backend nodes add capacity? Each node process is held to the same
 * CPU quota (bench/cgroup.ts; PostgreSQL, the broker, the plugins and the clients are not held), so that
 * on one machine a node's share of a core, not the machine, is the bound. One node, then three, each on
 * a fresh schema and broker namespace: `integrations` integrations, each with its own plugin process
 * (`builtin` reasoner) and a client keeping `inFlight` jobs in flight in closed loops (bench/scenarios/
 * jobs.ts's job: create, then follow until completed). An integration's client and plugin both talk to
 * one node, as a balancer routing by the integration id in the path would, spread evenly (`nodeOf`).
 *
 * Measured over the rounds: jobs/s, the nodes' summed CPU per job (/proc/<pid>/stat), how often the
 * quota held them back (cpu.stat), and the machine's busy cores (/proc/stat), so a reader sees whether
 * the machine rather than the quota was the bound. Afterwards the store is asked whether every job the
 * clients created ended exactly once. Without a writable cgroup the scenario says so and skips.
 */
import { randomBytes } from 'node:crypto';
import { POSTGRES, query } from '../postgres.js';
import { mkdirSync, rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connectBroker } from '../../adapters/brokers/connect.js';
import { cpuCgroup, cpuQuotaUnavailable, type CpuCgroup } from '../cgroup.js';
import { CLI, scratchDir } from '../contenders.js';
import { machineTicks, percentile, processCpuMs, startServer, stopServer, type ServerChild } from '../lib.js';
import { spread, type ScaleoutResults, type ScaleoutRow } from '../results.js';
import { createIntegration, oneJob, operatorTokenFile, startPlugin, type JobClient } from './jobs.js';

/** The broker: NATS by default; a redis:// URL runs the scenario on Redis Streams. */
const BROKER = process.env.ASSISTANT_RELAY_BENCH_SCALEOUT_BROKER ?? process.env.ASSISTANT_RELAY_BENCH_NATS ?? 'nats://127.0.0.1:4222';
const BROKER_NAME = BROKER.startsWith('redis:') ? 'Redis Streams' : 'NATS';

export interface ScaleoutOptions {
  /** Node counts to measure, the first the baseline (1, 3). */
  readonly nodes: readonly number[];
  /** Each node's share of a core (0.15). */
  readonly quota: number;
  readonly integrations: number;
  readonly inFlight: number;
  readonly warmupMs: number;
  readonly sliceMs: number;
  readonly rounds: number;
}

const TERMINAL = ['job.completed', 'job.failed', 'job.expired', 'job.cancelled'];

/** The node an integration's client and plugin use: integrations in turn, so each node serves as many. */
export const nodeOf = (index: number, nodes: number) => index % nodes;

export const ROUTING =
  "each integration's client and plugin talk to one node only, chosen by the integration (as a balancer hashing the integration id in the path would), the integrations spread evenly over the nodes";

interface Tenant extends JobClient {
  readonly plugin: Awaited<ReturnType<typeof startPlugin>>;
  created: number;
}

/** Every job created in `schema`: how many ended exactly once, never, more than once, and ended other than completed. */
async function endings(schema: string) {
  const { rows } = await query<{ once: string; never: string; twice: string; other: string }>(
    `WITH created AS (SELECT data::json->>'job_id' AS job FROM ${schema}.partition_events WHERE type = 'job.created'),
          ended AS (SELECT data::json->>'job_id' AS job, type FROM ${schema}.partition_events WHERE type = ANY($1)),
          counted AS (SELECT c.job, count(e.job) AS n FROM created c LEFT JOIN ended e ON e.job = c.job GROUP BY c.job)
     SELECT count(*) FILTER (WHERE n = 1) AS once, count(*) FILTER (WHERE n = 0) AS never, count(*) FILTER (WHERE n > 1) AS twice,
            (SELECT count(*) FROM ended WHERE type <> 'job.completed') AS other FROM counted`,
    [TERMINAL],
  );
  const row = rows[0]!;
  return { once: Number(row.once), never: Number(row.never), twice: Number(row.twice), other: Number(row.other) };
}

/** What one measured stretch saw. */
interface Stretch {
  readonly jobs: number;
  readonly ms: number;
  readonly latencies: number[];
  readonly nodeCpuMs: number;
  readonly busyCores: number;
  readonly generatorMs: number;
  readonly pluginCpuMs: number;
}

/** Closed loops: every tenant keeps `inFlight` jobs going for `ms`. */
async function stretch(tenants: readonly Tenant[], backends: readonly ServerChild[], inFlight: number, ms: number): Promise<Stretch> {
  const cpuOf = (children: ReadonlyArray<{ pid?: number | undefined }>) =>
    children.reduce((sum, child) => sum + (processCpuMs(child.pid!) ?? Number.NaN), 0);
  const nodeCpu = () => cpuOf(backends.map((backend) => backend.child));
  const pluginCpu = () => cpuOf(tenants.map((tenant) => tenant.plugin));
  const pluginsBefore = pluginCpu();
  const latencies: number[] = [];
  const [cpuBefore, ticksBefore, ownBefore, from] = [nodeCpu(), machineTicks(), process.cpuUsage(), performance.now()];
  const end = from + ms;
  await Promise.all(
    tenants.flatMap((tenant) =>
      Array.from({ length: inFlight }, async () => {
        while (performance.now() < end) {
          tenant.created += 1;
          latencies.push(await oneJob(tenant));
        }
      }),
    ),
  );
  const elapsed = performance.now() - from;
  const ticks = machineTicks();
  const own = process.cpuUsage(ownBefore);
  return {
    jobs: latencies.length,
    ms: elapsed,
    latencies,
    nodeCpuMs: nodeCpu() - cpuBefore,
    busyCores: ((ticks.busy - ticksBefore.busy) / (ticks.total - ticksBefore.total)) * availableParallelism(),
    generatorMs: (own.user + own.system) / 1000,
    pluginCpuMs: pluginCpu() - pluginsBefore,
  };
}

export async function scaleout(options: ScaleoutOptions): Promise<ScaleoutResults> {
  const unavailable = cpuQuotaUnavailable();
  if (unavailable !== undefined) {
    console.log(`bench: scaleout skipped: ${unavailable}`);
    return { rows: [], skipped: unavailable, routing: ROUTING, broker: BROKER_NAME };
  }
  const rows: ScaleoutRow[] = [];
  for (const nodes of options.nodes) rows.push(await scaleoutOf(nodes, options));
  return { rows, routing: ROUTING, broker: BROKER_NAME };
}

async function scaleoutOf(nodes: number, options: ScaleoutOptions): Promise<ScaleoutRow> {
  const dir = scratchDir();
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const backends: ServerChild[] = [];
  const tenants: Tenant[] = [];
  const cgroups: CpuCgroup[] = [];
  try {
    const maxJobs = String(Math.max(32, options.inFlight * 2));
    const args = [
      ...['--store', POSTGRES, '--schema', name, '--pubsub', BROKER, '--namespace', name, '--token-file', operatorTokenFile(dir)],
      ...['--max-open-jobs', maxJobs, '--max-followers', maxJobs, '--max-jobs-per-minute', '1000000'],
      // Nothing forgotten while measuring: the exactly-once check counts every job's events in the store.
      ...['--retention', 'off', '--max-settled-jobs', '100000000'],
    ];
    for (let i = 0; i < nodes; i += 1)
      backends.push(
        await startServer(`scale-out node ${i}`, [CLI, 'backend', '--port', '0', '--log-level', 'warn', ...args], {
          cwd: dir,
          stderrPath: join(dir, `node-${i}.stderr`),
          timeoutMs: 30_000,
        }),
      );
    // Started side by side: a dozen plugins one after the other would take most of a quick run.
    tenants.push(
      ...(await Promise.all(
        Array.from({ length: options.integrations }, async (_, i): Promise<Tenant> => {
          const origin = backends[nodeOf(i, nodes)]!.url.origin;
          const integration = await createIntegration(origin);
          const own = join(dir, `plugin-${i}`);
          mkdirSync(own);
          return {
            bases: [`${origin}/api/v1/assistant/integrations/${integration.integration_id}`],
            next: 0,
            headers: { authorization: `Bearer ${integration.client_token}` },
            plugin: await startPlugin(origin, integration, own),
            created: 0,
          };
        }),
      )),
    );
    // Held only once started: the quota would otherwise slow the migrations and the plugins' first streams.
    backends.forEach((backend, i) => {
      const cgroup = cpuCgroup(`node${i}`, options.quota);
      cgroups.push(cgroup);
      cgroup.hold(backend.child.pid!);
    });
    await stretch(tenants, backends, options.inFlight, options.warmupMs);
    const throttledBefore = cgroups.map((cgroup) => cgroup.throttling());
    const measured: Stretch[] = [];
    for (let round = 0; round < options.rounds; round += 1)
      measured.push(await stretch(tenants, backends, options.inFlight, options.sliceMs));
    const throttled = cgroups
      .map((cgroup, i) => ({ now: cgroup.throttling(), before: throttledBefore[i]! }))
      .reduce(
        (sum, { now, before }) => ({
          periods: sum.periods + now.periods - before.periods,
          throttled: sum.throttled + now.throttled - before.throttled,
        }),
        { periods: 0, throttled: 0 },
      );
    const total = (pick: (each: Stretch) => number) => measured.reduce((sum, each) => sum + pick(each), 0);
    const [jobs, ms] = [total((each) => each.jobs), total((each) => each.ms)];
    const sorted = Float64Array.from(measured.flatMap((each) => each.latencies)).sort();

    // The plugins first: stopped the other way round, they would spend their last seconds reconnecting.
    for (const tenant of tenants) tenant.plugin.kill('SIGTERM');
    await Promise.all(
      tenants.map(
        ({ plugin }) =>
          new Promise<void>((resolve) => {
            if (plugin.exitCode !== null || plugin.signalCode !== null) resolve();
            else plugin.once('exit', () => resolve());
          }),
      ),
    );
    for (const cgroup of cgroups) cgroup.release();
    for (const backend of backends) await stopServer(backend, 10_000);
    const ended = await endings(name);
    const created = tenants.reduce((sum, tenant) => sum + tenant.created, 0);
    return {
      nodes,
      quota: options.quota,
      integrations: options.integrations,
      inFlight: options.inFlight,
      jobsPerSecond: spread(measured.map((each) => (each.jobs * 1000) / each.ms)),
      p50Ms: percentile(sorted, 50),
      p99Ms: percentile(sorted, 99),
      nodeCpuUsPerJob: (total((each) => each.nodeCpuMs) * 1000) / jobs,
      nodeCores: total((each) => each.nodeCpuMs) / ms,
      throttledShare: throttled.periods === 0 ? 0 : throttled.throttled / throttled.periods,
      busyCores: spread(measured.map((each) => each.busyCores)),
      cores: availableParallelism(),
      generatorCores: total((each) => each.generatorMs) / ms,
      pluginCores: total((each) => each.pluginCpuMs) / ms,
      jobs: created,
      endedOnce: ended.once,
      neverEnded: ended.never + Math.max(0, created - (ended.once + ended.never + ended.twice)),
      endedTwice: ended.twice,
      notCompleted: ended.other,
    };
  } finally {
    for (const tenant of tenants) tenant.plugin.kill('SIGKILL');
    for (const cgroup of cgroups) cgroup.release();
    for (const backend of backends) await stopServer(backend, 1_000);
    await query(`DROP SCHEMA IF EXISTS ${name} CASCADE`).catch((error: Error) =>
      console.error(`bench: dropping ${name}: ${error.message}`),
    );
    const broker = await connectBroker({ url: BROKER, namespace: name, report: () => {} });
    await broker.remove();
    await broker.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
