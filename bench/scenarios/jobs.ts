/**
 * The relay's side of the reasoning channel scenario (jobs-run.ts): its setups, each the built CLI as
 * child processes on 127.0.0.1 (the embedded default, one node on a fresh SQLite log; the distributed
 * stores, PostgreSQL and NATS on loopback with a fresh schema and namespace, through one node
 * and through three, the client spreading its requests over the nodes in turn as a balancer would and the
 * plugin, `builtin` reasoner, holding its stream on the first; one node of issue 25's starting point,
 * bench/starting-point.ts), and the helpers the other job scenarios share: an integration, the plugin,
 * one job from its create to its completed view.
 *
 * A job is: POST …/jobs (the client), then GET …/jobs/{job_id}/events (SSE) read until the job's view
 * says `completed`. Afterwards every completed job is counted in the backend's log, and the plugin's, so
 * that a job the bench counted but the logs do not hold fails the scenario.
 */
import Database from 'better-sqlite3';
import { POSTGRES, query } from '../postgres.js';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { connectBroker } from '../../adapters/brokers/connect.js';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CLI, NODE_ARGS } from '../contenders.js';
import { startServer, stopServer, type ServerChild } from '../lib.js';
import { openedResult, pairedPlugin, sealedCreate, type Paired } from './jobs-byo.js';

/**
 * Where the relay keeps its jobs, and on how many nodes; `, BYO`: the integration paired and every job
 * sealed (jobs-byo.ts); the last, one node of issue 25's starting point (starting-point.ts).
 */
export type RelaySetup =
  'embedded' | 'embedded, BYO' | 'postgres, 1 node' | 'postgres, 1 node, BYO' | 'postgres, 3 nodes' | 'postgres, 1 node, starting point';

const isByo = (setup: RelaySetup) => setup.endsWith(', BYO');

export const STARTING_POINT_SETUP: RelaySetup = 'postgres, 1 node, starting point';

/** The machine's services the distributed setups run on (`.ci/run` starts them). */
const NATS = process.env.ASSISTANT_RELAY_BENCH_NATS ?? 'nats://127.0.0.1:4222';

/** A job not completed after this long fails the run rather than hang it. */
const JOB_TIMEOUT_MS = 15_000;
const PURPOSE = 'live_analysis';
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
  /** A paired integration's: each job sealed, each result opened. */
  readonly paired?: Paired;
}

/** A setup ready to take jobs: its client's side, its processes, and how it ends. */
export interface Channel extends JobClient {
  /** The server processes (a relay's backend nodes, a baseline): their CPU is the server's per job. */
  readonly servers: readonly ServerChild[];
  /** The plugin's process, when it runs in one of its own: its CPU per job. */
  readonly pluginPid?: number;
  /** Stops the plugin, then the servers, and checks that their logs hold the `measured` jobs completed. */
  readonly finish: (measured: number) => Promise<void>;
  /** Stops whatever is left, and removes what the setup made. */
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
  setup: RelaySetup,
  dir: string,
  cli: string,
): Promise<{
  backends: ServerChild[];
  /** An integration made by the operator; none for a BYO setup, whose integration a pairing makes. */
  integration?: Integration;
  /** The operator token's file, for the admin routes. */
  operatorToken: string;
  /** How many events of a type the backend's log holds. */
  count: (type: string) => Promise<number>;
  /** Removes the schema and the namespace of a distributed setup. */
  remove: () => Promise<void>;
}> {
  // One integration runs 100 jobs at once, each followed, round after round: past a tenant's default bounds (PROTOCOL.md 6e.18, 6e.19, 6e.23).
  const quotas = ['--max-open-jobs', '200', '--max-followers', '200', '--max-jobs-per-minute', '1000000'];
  const start = (args: readonly string[], i: number) =>
    startServer(`backend ${i}`, [...NODE_ARGS, cli, 'backend', '--port', '0', '--log-level', 'warn', ...quotas, ...args], {
      cwd: dir,
      stderrPath: join(dir, `backend-${i}.stderr`),
      timeoutMs: 15_000,
    });
  const operatorToken = operatorTokenFile(dir);
  if (setup.startsWith('embedded')) {
    const db = join(dir, 'backend.db');
    const integration = isByo(setup)
      ? undefined
      : (JSON.parse(
          execFileSync(process.execPath, [cli, 'backend', 'integration', 'create', '--db', db], { encoding: 'utf8' }),
        ) as Integration);
    return {
      backends: [await start(['--db', db, '--token-file', operatorToken], 0)],
      ...(integration === undefined ? {} : { integration }),
      operatorToken,
      count: async (type) => countIn(db, type),
      remove: async () => {},
    };
  }
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const args = ['--store', POSTGRES, '--schema', name, '--pubsub', NATS, '--namespace', name, '--token-file', operatorToken];
  const backends: ServerChild[] = [];
  for (let i = 0; i < (setup === 'postgres, 3 nodes' ? 3 : 1); i += 1) backends.push(await start(args, i));
  // The starting point's log was one table, not yet partitioned.
  const events = setup === STARTING_POINT_SETUP ? 'events' : 'partition_events';
  return {
    backends,
    ...(isByo(setup) ? {} : { integration: await createIntegration(backends[0]!.url.origin) }),
    operatorToken,
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
  return spawnPlugin(dir, ['--backend', origin, '--integration', integration.integration_id, '--relay-token-file', tokenFile]);
}

/** The plugin (`builtin` reasoner), its log in `dir`, on the integration `credentials` name, once it has started. */
export async function spawnPlugin(dir: string, credentials: readonly string[]): Promise<ChildProcess> {
  const plugin = spawn(
    process.execPath,
    [...NODE_ARGS, CLI, 'plugin', ...credentials, '--db', join(dir, 'plugin.db'), '--max-concurrent-jobs', '100', '--log-level', 'warn'],
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

/** A relay setup's channel: its backend nodes, one integration, and the plugin on the first node. */
export async function openRelay(setup: RelaySetup, dir: string, cli: string): Promise<Channel> {
  const { backends, integration: made, operatorToken, count, remove } = await backendsOf(setup, dir, cli);
  const origin = backends[0]!.url.origin;
  const { integration, plugin, paired } =
    made === undefined
      ? await pairedPlugin(origin, dir, operatorToken)
      : { integration: made, plugin: await startPlugin(origin, made, dir) };
  return {
    bases: backends.map((backend) => `${backend.url.origin}/api/v1/assistant/integrations/${integration.integration_id}`),
    next: 0,
    headers: { authorization: `Bearer ${integration.client_token}` },
    ...(paired === undefined ? {} : { paired }),
    servers: backends,
    pluginPid: plugin.pid!,
    async finish(measured) {
      // The plugin first: stopped the other way round, it would spend its last seconds reconnecting.
      plugin.kill('SIGTERM');
      await new Promise((resolve) => plugin.once('exit', resolve));
      for (const backend of backends) await stopServer(backend, 10_000);
      const completed = await count('job.completed');
      const finished = countIn(join(dir, 'plugin.db'), 'plugin.job_finished');
      if (completed < measured || finished < measured)
        throw new Error(
          `${setup}: ${measured} jobs measured, but ${completed} job.completed in the backend's log and ${finished} plugin.job_finished in the plugin's`,
        );
    },
    async remove() {
      plugin.kill('SIGKILL');
      for (const backend of backends) await stopServer(backend, 1_000);
      await remove();
    },
  };
}

/** One job, from its create to its completed view on the follow stream (on the next node): the latency in ms. */
export async function oneJob(channel: JobClient): Promise<number> {
  const { bases, headers, paired } = channel;
  const base = bases[channel.next++ % bases.length]!;
  const job_id = randomUUID();
  const started = performance.now();
  const body = paired === undefined ? { job_id, purpose: PURPOSE, payload: PAYLOAD } : sealedCreate(paired, job_id, PURPOSE, PAYLOAD);
  const created = await fetch(`${base}/jobs`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
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
    const completed = text.indexOf('"state":"completed"');
    if (completed >= 0) {
      if (paired === undefined) break;
      const end = text.indexOf('\n\n', completed);
      if (end < 0) continue;
      // Its frame: from the blank line before (none: the stream's first) to the one after.
      const frame = text.slice(text.lastIndexOf('\n\n', completed) + 1, end);
      openedResult(paired, JSON.parse(frameData(frame)) as Parameters<typeof openedResult>[1]);
      break;
    }
    if (/"state":"(failed|expired|cancelled)"/.test(text)) throw new Error(`job ${job_id} did not complete: ${text.slice(-500)}`);
  }
  return performance.now() - started;
}

/** An SSE frame's data: its `data:` lines joined. */
const frameData = (frame: string) =>
  frame
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice('data: '.length))
    .join('\n');

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
