/**
 * Hostile tenants (issue 23): while one tenant attacks the backend, do another's jobs go on? One backend
 * process on a fresh embedded SQLite log. The quiet tenant: an integration with the real plugin (`builtin`
 * reasoner) and a client in this process creating jobs in closed loops, each at most one job per PACE_MS.
 * The hostile tenant: a fresh integration of its own for each attack, attacking from a child process
 * (hostile-attacks.ts) and from other loopback addresses. First a phase with no attack, then each attack
 * in turn for the same time. After each phase: the quiet tenant's jobs (completed, p50, p99, errors), what
 * the attacker's requests were answered, whether a bystander can still pair, and the backend's resident
 * memory, log files and events. Nothing is asserted here: the bench reports, test/hostile/ holds the limits.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CLI, scratchDir } from '../contenders.js';
import { percentile, rssKiB, startServer, stopServer, type ServerChild } from '../lib.js';
import type { HostileRow } from '../results.js';
import { countIn, createIntegration, oneJob, operatorTokenFile, startPlugin, type Integration, type JobClient } from './jobs.js';

/** Each attack the hostile tenant runs in turn, after a phase with none. */
export const ATTACKS = [
  'none',
  'redos',
  'oversize',
  'open-jobs',
  'followers',
  'heartbeat-flips',
  'rekeys',
  'pairing-churn',
  'pairing-hold',
] as const;
export type Attack = (typeof ATTACKS)[number];

export interface HostileOptions {
  /** How long each phase runs. */
  readonly phaseMs: number;
  /** The quiet tenant's jobs before the first phase, unmeasured. */
  readonly warmupMs: number;
  /** The quiet tenant's closed loops. */
  readonly inFlight: number;
  /** How many `a` before the `!` of the ReDoS result. */
  readonly redosLength: number;
}

/** What the parent asks the attacker (hostile-attacks.ts), and what it answers. */
export interface AttackTask {
  readonly attack: Attack;
  readonly origin: string;
  /** The hostile tenant's own integration, fresh for this attack. */
  readonly tenant: Integration;
  readonly ms: number;
  readonly redosLength: number;
}

export type FromAttacker =
  | { readonly type: 'ready' }
  | { readonly type: 'ran'; readonly answers: Record<string, number>; readonly bystander: string }
  | { readonly type: 'failed'; readonly message: string };

const WHAT: Record<Attack, (options: HostileOptions) => string> = {
  none: () => 'no attack',
  redos: ({ redosLength }) =>
    `ReDoS: jobs whose response_schema has \`pattern: "^(a+)+$"\`, each answered with ${redosLength} \`a\` and a \`!\`, one at a time`,
  oversize: () => 'jobs of about 3.9 MiB, each answered with a result of about 3.9 MiB, two at a time',
  'open-jobs': () => 'job-create flood: small jobs with a deadline of one hour, eight at a time',
  followers: () => '3,000 follower streams of one job, on one token',
  'heartbeat-flips': () => "heartbeats flipping the plugin's status between ready and busy, eight at a time",
  rekeys: () => 'rekey requests, each a new rotation, eight at a time',
  'pairing-churn': () =>
    'from one address: pairings started and aborted, joins with unknown handles, and pairings taken through every step with made-up keys',
  'pairing-hold': () => 'pairings started and left open, from four addresses',
};

/** Each of the quiet tenant's loops starts a job at most this often: a modest, steady rate. */
const PACE_MS = 100;
/** A backend an attack left busy (a backtracking regular expression) is waited for this long before the scenario fails. */
const SETTLE_MS = 600_000;
const ATTACKER = fileURLToPath(new URL('./hostile-attacks.ts', import.meta.url));

const attackers = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of attackers) child.kill('SIGKILL');
});

/** The attacker's next message, of the type expected; its exit or failure first is an error. */
function next<Type extends FromAttacker['type']>(child: ChildProcess, type: Type): Promise<Extract<FromAttacker, { type: Type }>> {
  return new Promise((resolve, reject) => {
    const exited = (code: number | null, signal: string | null) => reject(new Error(`the attacker exited (${code ?? signal})`));
    child.once('exit', exited);
    child.once('message', (message: FromAttacker) => {
      child.off('exit', exited);
      if (message.type === type) resolve(message as Extract<FromAttacker, { type: Type }>);
      else reject(new Error(`the attacker: ${message.type === 'failed' ? message.message : `answered ${message.type}`}`));
    });
  });
}

/** The quiet tenant's jobs for `ms`: refusals and timeouts are counted, never thrown. */
async function quietJobs(client: JobClient, inFlight: number, ms: number): Promise<HostileRow['quiet']> {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) {
        const started = performance.now();
        try {
          latencies.push(await oneJob(client));
        } catch (error) {
          errors += 1;
          firstError ??= (error as Error).message.slice(0, 200);
        }
        if (performance.now() < end) await sleep(Math.max(0, PACE_MS - (performance.now() - started)));
      }
    }),
  );
  const sorted = Float64Array.from(latencies).sort();
  return {
    completed: latencies.length,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    errors,
    ...(firstError === undefined ? {} : { firstError }),
  };
}

/** Until the backend answers `/healthz` again: an attack may have left it busy after the attacker stopped. */
async function answering(backend: ServerChild): Promise<void> {
  const until = performance.now() + SETTLE_MS;
  for (;;) {
    if (backend.child.exitCode !== null || backend.child.signalCode !== null)
      throw new Error(`the backend exited (${backend.child.exitCode ?? backend.child.signalCode})`);
    try {
      const health = await fetch(`${backend.url.origin}/healthz`, { signal: AbortSignal.timeout(5_000) });
      await health.arrayBuffer();
      if (health.ok) return;
    } catch {
      // Not answering yet.
    }
    if (performance.now() > until) throw new Error(`the backend did not answer /healthz within ${SETTLE_MS / 1000} s of an attack`);
    await sleep(500);
  }
}

const sizeOf = (path: string) => (existsSync(path) ? statSync(path).size : 0);

async function phase(attack: Attack, backend: ServerChild, client: JobClient, db: string, options: HostileOptions): Promise<HostileRow> {
  const origin = backend.url.origin;
  const tenant = await createIntegration(origin);
  const before = countIn(db);
  const child = fork(ATTACKER, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  attackers.add(child);
  child.once('exit', () => attackers.delete(child));
  try {
    await next(child, 'ready');
    const started = performance.now();
    child.send({ attack, origin, tenant, ms: options.phaseMs, redosLength: options.redosLength } satisfies AttackTask);
    const [quiet, ran] = await Promise.all([quietJobs(client, options.inFlight, options.phaseMs), next(child, 'ran')]);
    const seconds = (performance.now() - started) / 1000;
    await answering(backend);
    const events = countIn(db);
    return {
      attack,
      what: WHAT[attack](options),
      seconds,
      quiet,
      attacker: ran.answers,
      bystander: ran.bystander,
      rssMiB: rssKiB(backend.child.pid!) / 1024,
      logMiB: (sizeOf(db) + sizeOf(`${db}-wal`)) / 2 ** 20,
      events,
      eventsAdded: events - before,
    };
  } finally {
    if (child.connected) child.disconnect();
    await stopServer({ child }, 5_000);
  }
}

export async function hostile(options: HostileOptions): Promise<HostileRow[]> {
  const dir = scratchDir();
  const db = join(dir, 'backend.db');
  // Every limit at its default, but two: pairing is open (the policy that lets the pairing attacks reach the
  // per-source limits; under the default, tickets, they are refused at once), and the quiet tenant, a load
  // generator of up to 20 jobs a second, may create more than the default 60 a minute.
  const defaultsBut = ['--pairing', 'open', '--max-jobs-per-minute', '1200'];
  const backend = await startServer(
    'backend',
    [CLI, 'backend', '--port', '0', '--log-level', 'warn', '--db', db, '--token-file', operatorTokenFile(dir), ...defaultsBut],
    {
      cwd: dir,
      stderrPath: join(dir, 'backend.stderr'),
      timeoutMs: 15_000,
    },
  );
  let plugin: ChildProcess | undefined;
  try {
    const quiet = await createIntegration(backend.url.origin);
    plugin = await startPlugin(backend.url.origin, quiet, dir);
    const client: JobClient = {
      bases: [`${backend.url.origin}/api/v1/assistant/integrations/${quiet.integration_id}`],
      next: 0,
      headers: { authorization: `Bearer ${quiet.client_token}` },
    };
    await quietJobs(client, options.inFlight, options.warmupMs);
    const rows: HostileRow[] = [];
    for (const attack of ATTACKS) {
      const row = await phase(attack, backend, client, db, options);
      console.log(
        `bench: hostile ${attack}: quiet p99 ${row.quiet.p99Ms.toFixed(1)} ms, ${row.quiet.completed} jobs, ${row.quiet.errors} errors; backend ${row.rssMiB.toFixed(0)} MiB, log ${row.logMiB.toFixed(1)} MiB`,
      );
      rows.push(row);
    }
    return rows;
  } finally {
    // The plugin first: stopped the other way round, it would spend its last seconds reconnecting.
    if (plugin !== undefined) await stopServer({ child: plugin }, 10_000);
    await stopServer(backend, 10_000);
    rmSync(dir, { recursive: true, force: true });
  }
}
