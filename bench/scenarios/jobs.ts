/**
 * The reasoning channel: jobs per second through backend → plugin (`builtin` reasoner) → result, and the
 * latency from creating a job to reading its result, at 1 and at 100 concurrent jobs. Both are the built
 * CLI as child processes on 127.0.0.1, each on a fresh SQLite log.
 *
 * A job is: POST …/jobs (the client), then GET …/jobs/{job_id}/events (SSE) read until the job's view
 * says `completed`. Each concurrency runs a warm-up unmeasured, then `rounds` measured slices, in closed
 * loops. Afterwards every completed job is counted in the backend's log, and the plugin's, so that a job
 * the bench counted but the logs do not hold fails the scenario.
 */
import Database from 'better-sqlite3';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CLI, scratchDir } from '../contenders.js';
import { percentile, startServer, stopServer, type ServerChild } from '../lib.js';
import { spread, type JobsRow } from '../results.js';

export interface JobsOptions {
  readonly concurrency: readonly number[];
  readonly warmupMs: number;
  readonly sliceMs: number;
  readonly rounds: number;
}

/** A job not completed after this long fails the run rather than hang it. */
const JOB_TIMEOUT_MS = 15_000;
const PAYLOAD = { session_id: 'bench', transcript: [{ speaker: 'Ana', text: 'We decided to start in March. What is the budget?' }] };

interface Channel {
  readonly base: string;
  readonly headers: Record<string, string>;
  readonly backend: ServerChild;
  readonly plugin: ChildProcess;
  readonly backendDb: string;
  readonly pluginDb: string;
}

async function open(dir: string): Promise<Channel> {
  const backendDb = join(dir, 'backend.db');
  const pluginDb = join(dir, 'plugin.db');
  const integration = JSON.parse(execFileSync(process.execPath, [CLI, 'backend', 'integration', 'create', '--db', backendDb], { encoding: 'utf8' })) as {
    integration_id: string;
    relay_token: string;
    client_token: string;
  };
  const tokenFile = join(dir, 'relay-token');
  writeFileSync(tokenFile, integration.relay_token, { mode: 0o600 });
  const backend = await startServer('backend', [CLI, 'backend', '--port', '0', '--db', backendDb, '--log-level', 'warn'], { cwd: dir, stderrPath: join(dir, 'backend.stderr'), timeoutMs: 15_000 });
  const plugin = spawn(
    process.execPath,
    [CLI, 'plugin', '--backend', backend.url.origin, '--integration', integration.integration_id, '--relay-token-file', tokenFile, '--db', pluginDb, '--max-concurrent-jobs', '100', '--log-level', 'warn'],
    { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  process.on('exit', () => plugin.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    plugin.stdout!.once('data', () => resolve());
    plugin.once('exit', (code) => reject(new Error(`the plugin exited (${code}) before it started`)));
  });
  return { base: `${backend.url.origin}/api/v1/assistant/integrations/${integration.integration_id}`, headers: { authorization: `Bearer ${integration.client_token}` }, backend, plugin, backendDb, pluginDb };
}

/** One job, from its create to its completed view on the follow stream: the latency in ms. */
async function oneJob({ base, headers }: Channel): Promise<number> {
  const job_id = randomUUID();
  const started = performance.now();
  const created = await fetch(`${base}/jobs`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ job_id, purpose: 'live_analysis', payload: PAYLOAD }),
  });
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${await created.text()}`);
  await created.arrayBuffer();
  const events = await fetch(`${base}/jobs/${job_id}/events`, { headers, signal: AbortSignal.timeout(JOB_TIMEOUT_MS) });
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

const count = (db: string, type: string) => {
  const conn = new Database(db, { readonly: true });
  try {
    return (conn.prepare("SELECT count(*) AS n FROM events WHERE json_extract(data, '$.type') = ?").get(type) as { n: number }).n;
  } finally {
    conn.close();
  }
};

export async function jobs(options: JobsOptions): Promise<JobsRow[]> {
  const dir = scratchDir();
  const channel = await open(dir);
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
      rows.push({ concurrency, jobsPerSecond: spread(rates), p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) });
    }
    // The plugin first: stopped the other way round, it would spend its last seconds reconnecting.
    channel.plugin.kill('SIGTERM');
    await new Promise((resolve) => channel.plugin.once('exit', resolve));
    await stopServer(channel.backend, 10_000);
    const completed = count(channel.backendDb, 'job.completed');
    const finished = count(channel.pluginDb, 'plugin.job_finished');
    if (completed < measured || finished < measured) throw new Error(`${measured} jobs measured, but ${completed} job.completed in the backend's log and ${finished} plugin.job_finished in the plugin's`);
    return rows;
  } finally {
    channel.plugin.kill('SIGKILL');
    await stopServer(channel.backend, 1_000);
    rmSync(dir, { recursive: true, force: true });
  }
}
