/**
 * `npm run bench` (second part): reasoning jobs per second through backend → plugin (`builtin`
 * reasoner) → result, and the latency from creating a job to reading its result, at 1 and at 100
 * concurrent jobs. Both are the built CLI as child processes on 127.0.0.1, each on a fresh SQLite log.
 *
 * A job is: POST …/jobs (the client), then GET …/jobs/{job_id}/events (SSE) read until the job's view
 * says `completed`. Each concurrency runs `--warmup` seconds unmeasured, then `--duration` seconds
 * measured, in closed loops. Afterwards every completed job is counted in the backend's log, and the
 * plugin's, so that a job the bench counted but the logs do not hold fails the run (exit 1).
 */
import Database from 'better-sqlite3';
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { percentile, processCpuMs, startServer, stopServer } from './lib.js';

const USAGE = `usage: tsx bench/jobs.ts [--duration S] [--warmup S]
  --duration S   measured seconds at each concurrency (default 5)
  --warmup S     unmeasured seconds before each (default 1)`;

const CLI = fileURLToPath(new URL('../dist/adapters/cli/main.js', import.meta.url));
const CONCURRENCY = [1, 100] as const;
/** A job not completed after this long fails the run rather than hang it. */
const JOB_TIMEOUT_MS = 15_000;

const { values } = parseArgs({ options: { duration: { type: 'string' }, warmup: { type: 'string' }, help: { type: 'boolean' } } });
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const seconds = (text: string | undefined, fallback: number) => {
  const n = text === undefined ? fallback : Number(text);
  if (!Number.isFinite(n) || n <= 0 || n > 600) {
    console.error(`durations are seconds from 0 to 600\n${USAGE}`);
    process.exit(2);
  }
  return n * 1000;
};
const durationMs = seconds(values.duration, 5);
const warmupMs = seconds(values.warmup, 1);

const dir = mkdtempSync(join(tmpdir(), 'assistant-relay-jobs-bench-'));
const backendDb = join(dir, 'backend.db');
const pluginDb = join(dir, 'plugin.db');
const integration = JSON.parse(execFileSync(process.execPath, [CLI, 'backend', 'integration', 'create', '--db', backendDb], { encoding: 'utf8' })) as {
  integration_id: string;
  relay_token: string;
  client_token: string;
};
const tokenFile = join(dir, 'relay-token');
writeFileSync(tokenFile, integration.relay_token, { mode: 0o600 });

const backend = await startServer('backend', [CLI, 'backend', '--port', '0', '--db', backendDb, '--log-level', 'warn'], {
  cwd: dir,
  stderrPath: join(dir, 'backend.stderr'),
  timeoutMs: 15_000,
});
const base = `${backend.url.origin}/api/v1/assistant/integrations/${integration.integration_id}`;
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

const headers = { authorization: `Bearer ${integration.client_token}` };
const PAYLOAD = { session_id: 'bench', transcript: [{ speaker: 'Ana', text: 'We decided to start in March. What is the budget?' }] };

/** One job, from its create to its completed view on the follow stream: the latency in ms. */
async function oneJob(): Promise<number> {
  const job_id = randomUUID();
  const started = performance.now();
  const created = await fetch(`${base}/jobs`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ job_id, purpose: 'live_analysis', payload: PAYLOAD }),
  });
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${await created.text()}`);
  await created.arrayBuffer();
  const abort = AbortSignal.timeout(JOB_TIMEOUT_MS);
  const events = await fetch(`${base}/jobs/${job_id}/events`, { headers, signal: abort });
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of events.body as unknown as AsyncIterable<Uint8Array>) {
    text += decoder.decode(chunk, { stream: true });
    if (text.includes('"state":"completed"')) break;
    if (/"state":"(failed|expired|cancelled)"/.test(text)) throw new Error(`job ${job_id} did not complete: ${text.slice(-500)}`);
  }
  return performance.now() - started;
}

interface Phase {
  readonly concurrency: number;
  readonly jobs: number;
  readonly perSecond: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly backendCpuMsPerJob: number | undefined;
  readonly pluginCpuMsPerJob: number | undefined;
}

async function phase(concurrency: number): Promise<Phase> {
  const latencies: number[] = [];
  let measuring = false;
  let done = false;
  const worker = async () => {
    while (!done) {
      const latency = await oneJob();
      if (measuring && !done) latencies.push(latency);
    }
  };
  const workers = Array.from({ length: concurrency }, worker);
  await new Promise((resolve) => setTimeout(resolve, warmupMs));
  const cpu = [processCpuMs(backend.child.pid!), processCpuMs(plugin.pid!)];
  measuring = true;
  const from = performance.now();
  await new Promise((resolve) => setTimeout(resolve, durationMs));
  done = true;
  const elapsed = performance.now() - from;
  const cpuAfter = [processCpuMs(backend.child.pid!), processCpuMs(plugin.pid!)];
  await Promise.all(workers);
  const sorted = Float64Array.from(latencies).sort();
  const perJob = (i: number) => (cpu[i] === undefined || cpuAfter[i] === undefined || latencies.length === 0 ? undefined : (cpuAfter[i]! - cpu[i]!) / latencies.length);
  return {
    concurrency,
    jobs: latencies.length,
    perSecond: (latencies.length * 1000) / elapsed,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    backendCpuMsPerJob: perJob(0),
    pluginCpuMsPerJob: perJob(1),
  };
}

let failed = false;
try {
  const phases: Phase[] = [];
  for (const concurrency of CONCURRENCY) phases.push(await phase(concurrency));
  const ms = (n: number | undefined) => (n === undefined ? 'n/a' : `${n.toFixed(2)} ms`);
  console.log('reasoning jobs: backend → plugin (builtin) → result, create to completed view read');
  for (const p of phases) {
    console.log(
      `  ${String(p.concurrency).padStart(3)} concurrent: ${p.perSecond.toFixed(1)} jobs/s (${p.jobs} jobs), latency p50 ${ms(p.p50)}, p95 ${ms(p.p95)}, p99 ${ms(p.p99)}; ` +
        `CPU per job: backend ${ms(p.backendCpuMsPerJob)}, plugin ${ms(p.pluginCpuMsPerJob)}`,
    );
  }
  // The plugin first: stopped the other way round, it would spend its last seconds reconnecting.
  plugin.kill('SIGTERM');
  await new Promise((resolve) => plugin.once('exit', resolve));
  await stopServer(backend, 10_000);
  const count = (db: string, type: string) => {
    const conn = new Database(db, { readonly: true });
    try {
      return (conn.prepare("SELECT count(*) AS n FROM events WHERE json_extract(data, '$.type') = ?").get(type) as { n: number }).n;
    } finally {
      conn.close();
    }
  };
  const counted = phases.reduce((n, p) => n + p.jobs, 0);
  const completed = count(backendDb, 'job.completed');
  const finished = count(pluginDb, 'plugin.job_finished');
  console.log(`  durability: ${completed} job.completed in the backend's log, ${finished} plugin.job_finished in the plugin's (≥ ${counted} measured)`);
  if (completed < counted || finished < counted) failed = true;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
