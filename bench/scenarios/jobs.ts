/**
 * The reasoning channel: jobs per second through backend → plugin (`builtin` reasoner) → result, and the
 * latency from creating a job to reading its result, at 1 and at 100 concurrent jobs. All are the built
 * CLI as child processes on 127.0.0.1, in three setups: the embedded default (one node on a fresh SQLite
 * log), and the distributed stores (PostgreSQL and NATS JetStream on loopback, a fresh schema and
 * namespace) through one node and through three. With three, the client spreads its requests over the
 * nodes in turn (as a balancer would) and the plugin holds its stream on the first, so most jobs are
 * created on a node other than the one that delivers them.
 * A whole run adds one node of issue 25's starting point (bench/starting-point.ts, the same plugin),
 * so that jobs/s through one node now is compared with where the issue started, in the same run.
 *
 * A job is: POST …/jobs (the client), then GET …/jobs/{job_id}/events (SSE) read until the job's view
 * says `completed`. Each concurrency runs a warm-up unmeasured, then `rounds` measured slices, in closed
 * loops. Afterwards every completed job is counted in the backend's log, and the plugin's, so that a job
 * the bench counted but the logs do not hold fails the scenario.
 */
import Database from 'better-sqlite3';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import { connectBroker } from '../../adapters/brokers/connect.js';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CLI, scratchDir } from '../contenders.js';
import { percentile, startServer, stopServer, type ServerChild } from '../lib.js';
import { spread, type JobsRow } from '../results.js';

/** Where the backend keeps its jobs, and on how many nodes; the last, one node of issue 25's starting point (starting-point.ts). */
export type JobsSetup = 'embedded' | 'postgres, 1 node' | 'postgres, 3 nodes' | 'postgres, 1 node, starting point';

export const JOBS_SETUPS: readonly JobsSetup[] = ['embedded', 'postgres, 1 node', 'postgres, 3 nodes'];
export const STARTING_POINT_SETUP: JobsSetup = 'postgres, 1 node, starting point';

/** The machine's services the distributed setups run on (`.ci/run` starts them). */
const POSTGRES = process.env.ASSISTANT_RELAY_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
const NATS = process.env.ASSISTANT_RELAY_BENCH_NATS ?? 'nats://127.0.0.1:4222';

export interface JobsOptions {
  readonly setups: readonly JobsSetup[];
  readonly concurrency: readonly number[];
  readonly warmupMs: number;
  readonly sliceMs: number;
  readonly rounds: number;
  /** The starting point's built CLI, for its setup. */
  readonly startingPointCli?: string;
}

/** A job not completed after this long fails the run rather than hang it. */
const JOB_TIMEOUT_MS = 15_000;
const PAYLOAD = { session_id: 'bench', transcript: [{ speaker: 'Ana', text: 'We decided to start in March. What is the budget?' }] };

export interface Integration {
  readonly integration_id: string;
  readonly relay_token: string;
  readonly client_token: string;
}

/** What creates and follows jobs: the client's side of a channel. */
export interface JobClient {
  /** Each node's `…/integrations/{id}`: a job's requests go to the next in turn. */
  readonly bases: readonly string[];
  next: number;
  readonly headers: Record<string, string>;
}

interface Channel extends JobClient {
  readonly backends: readonly ServerChild[];
  readonly plugin: ChildProcess;
  /** How many events of a type the backend's log holds. */
  readonly count: (type: string) => Promise<number>;
  readonly pluginDb: string;
  /** Removes the schema and the namespace of a distributed setup. */
  readonly remove: () => Promise<void>;
}

/** The operator token of `operatorTokenFile`: the admin routes' and /metrics'. */
export const OPERATOR = 'bench-operator-token';

/** The operator token's file in `dir`, for `backend --token-file`: it turns the admin routes on. */
export function operatorTokenFile(dir: string): string {
  const file = join(dir, 'operator-token');
  writeFileSync(file, OPERATOR, { mode: 0o600 });
  return file;
}

/** A new integration, through the operator's route of a backend started with `operatorTokenFile`. */
export async function createIntegration(origin: string): Promise<Integration> {
  const created = await fetch(`${origin}/api/v1/admin/integrations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
    body: '{}',
  });
  if (created.status !== 201) throw new Error(`creating the integration answered ${created.status}: ${await created.text()}`);
  return (await created.json()) as Integration;
}

/** The backend nodes of a setup, with one integration. */
async function backendsOf(
  setup: JobsSetup,
  dir: string,
  cli: string,
): Promise<Pick<Channel, 'backends' | 'count' | 'remove'> & { integration: Integration }> {
  // One integration runs 100 jobs at once, each followed, round after round: past a tenant's default bounds (PROTOCOL.md 6e.18, 6e.19, 6e.23).
  const quotas = ['--max-open-jobs', '200', '--max-followers', '200', '--max-jobs-per-minute', '1000000'];
  const start = (args: readonly string[], i: number) =>
    startServer(`backend ${i}`, [cli, 'backend', '--port', '0', '--log-level', 'warn', ...quotas, ...args], {
      cwd: dir,
      stderrPath: join(dir, `backend-${i}.stderr`),
      timeoutMs: 15_000,
    });
  if (setup === 'embedded') {
    const db = join(dir, 'backend.db');
    const integration = JSON.parse(
      execFileSync(process.execPath, [cli, 'backend', 'integration', 'create', '--db', db], { encoding: 'utf8' }),
    ) as Integration;
    return { backends: [await start(['--db', db], 0)], integration, count: async (type) => countIn(db, type), remove: async () => {} };
  }
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const args = ['--store', POSTGRES, '--schema', name, '--pubsub', NATS, '--namespace', name, '--token-file', operatorTokenFile(dir)];
  const backends: ServerChild[] = [];
  for (let i = 0; i < (setup === 'postgres, 3 nodes' ? 3 : 1); i += 1) backends.push(await start(args, i));
  const query = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) => {
    const client = new pg.Client({ connectionString: POSTGRES });
    await client.connect();
    try {
      return await client.query<R>(text, values);
    } finally {
      await client.end();
    }
  };
  // The starting point's log was one table, not yet partitioned.
  const events = setup === STARTING_POINT_SETUP ? 'events' : 'partition_events';
  return {
    backends,
    integration: await createIntegration(backends[0]!.url.origin),
    count: async (type) =>
      Number((await query<{ n: string }>(`SELECT count(*) AS n FROM ${name}.${events} WHERE type = $1`, [type])).rows[0]!.n),
    async remove() {
      await query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
      const broker = await connectBroker({ url: NATS, namespace: name, report: () => {} });
      await broker.remove();
      await broker.close();
    },
  };
}

const plugins = new Set<ChildProcess>();
// Whatever way the bench ends, no plugin outlives it (one listener for them all: a scenario may start many).
process.on('exit', () => {
  for (const plugin of plugins) plugin.kill('SIGKILL');
});

/** The plugin (`builtin` reasoner) on the integration's stream, once it has started. */
export async function startPlugin(origin: string, integration: Integration, dir: string): Promise<ChildProcess> {
  const tokenFile = join(dir, `relay-token-${integration.integration_id}`);
  writeFileSync(tokenFile, integration.relay_token, { mode: 0o600 });
  const plugin = spawn(
    process.execPath,
    [
      CLI,
      'plugin',
      '--backend',
      origin,
      '--integration',
      integration.integration_id,
      '--relay-token-file',
      tokenFile,
      '--db',
      join(dir, 'plugin.db'),
      '--max-concurrent-jobs',
      '100',
      '--log-level',
      'warn',
    ],
    { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  plugins.add(plugin);
  plugin.once('exit', () => plugins.delete(plugin));
  await new Promise<void>((resolve, reject) => {
    plugin.stdout!.once('data', () => resolve());
    plugin.once('exit', (code) => reject(new Error(`the plugin exited (${code}) before it started`)));
  });
  return plugin;
}

async function open(setup: JobsSetup, dir: string, cli: string): Promise<Channel> {
  const { backends, integration, count, remove } = await backendsOf(setup, dir, cli);
  return {
    bases: backends.map((backend) => `${backend.url.origin}/api/v1/assistant/integrations/${integration.integration_id}`),
    next: 0,
    headers: { authorization: `Bearer ${integration.client_token}` },
    backends,
    plugin: await startPlugin(backends[0]!.url.origin, integration, dir),
    count,
    pluginDb: join(dir, 'plugin.db'),
    remove,
  };
}

/** One job, from its create to its completed view on the follow stream (on the next node): the latency in ms. */
export async function oneJob(channel: JobClient): Promise<number> {
  const { bases, headers } = channel;
  const base = bases[channel.next++ % bases.length]!;
  const job_id = randomUUID();
  const started = performance.now();
  const created = await fetch(`${base}/jobs`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ job_id, purpose: 'live_analysis', payload: PAYLOAD }),
  });
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${await created.text()}`);
  await created.arrayBuffer();
  const events = await fetch(`${bases[channel.next++ % bases.length]!}/jobs/${job_id}/events`, {
    headers,
    signal: AbortSignal.timeout(JOB_TIMEOUT_MS),
  });
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of events.body as unknown as AsyncIterable<Uint8Array>) {
    text += decoder.decode(chunk, { stream: true });
    if (text.includes('"state":"completed"')) break;
    if (/"state":"(failed|expired|cancelled)"/.test(text)) throw new Error(`job ${job_id} did not complete: ${text.slice(-500)}`);
  }
  return performance.now() - started;
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

/** How many events of `type` (of any type, without one) an SQLite log holds. */
export const countIn = (db: string, type?: string) => {
  const conn = new Database(db, { readonly: true });
  try {
    if (type === undefined) return (conn.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
    return (conn.prepare("SELECT count(*) AS n FROM events WHERE json_extract(data, '$.type') = ?").get(type) as { n: number }).n;
  } finally {
    conn.close();
  }
};

export async function jobs(options: JobsOptions): Promise<JobsRow[]> {
  const rows: JobsRow[] = [];
  for (const setup of options.setups) rows.push(...(await jobsOf(setup, options)));
  return rows;
}

async function jobsOf(setup: JobsSetup, options: JobsOptions): Promise<JobsRow[]> {
  const dir = scratchDir();
  const cli = setup === STARTING_POINT_SETUP ? options.startingPointCli : CLI;
  if (cli === undefined) throw new Error(`${setup}: no starting point was built`);
  const channel = await open(setup, dir, cli);
  try {
    const rows: JobsRow[] = [];
    let measured = 0;
    for (const concurrency of options.concurrency) {
      await slice(channel, concurrency, options.warmupMs);
      const rates: number[] = [];
      const latencies: number[] = [];
      for (let round = 0; round < options.rounds; round += 1) {
        const ran = await slice(channel, concurrency, options.sliceMs);
        rates.push(ran.perSecond);
        latencies.push(...ran.latencies);
      }
      measured += latencies.length;
      const sorted = Float64Array.from(latencies).sort();
      rows.push({ setup, concurrency, jobsPerSecond: spread(rates), p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) });
    }
    // The plugin first: stopped the other way round, it would spend its last seconds reconnecting.
    channel.plugin.kill('SIGTERM');
    await new Promise((resolve) => channel.plugin.once('exit', resolve));
    for (const backend of channel.backends) await stopServer(backend, 10_000);
    const completed = await channel.count('job.completed');
    const finished = countIn(channel.pluginDb, 'plugin.job_finished');
    if (completed < measured || finished < measured)
      throw new Error(
        `${setup}: ${measured} jobs measured, but ${completed} job.completed in the backend's log and ${finished} plugin.job_finished in the plugin's`,
      );
    return rows;
  } finally {
    channel.plugin.kill('SIGKILL');
    for (const backend of channel.backends) await stopServer(backend, 1_000);
    await channel.remove();
    rmSync(dir, { recursive: true, force: true });
  }
}
