/**
 * `npm run bench`: turns per second and turn latency of the relay (built CLI, `echo` agent, a fresh
 * SQLite log) against a bare fastify baseline (bench/baseline.ts), in the same run, on 127.0.0.1.
 *
 * A turn is: POST /v1/incoming, then read that task's terminal frame on the session's open
 * GET /v1/events stream. Latency runs from sending the POST to reading the terminal frame.
 *
 *   1. `--sessions` (100) sessions, one SSE reader each, each doing turns in a closed loop:
 *      `--warmup` seconds unmeasured, then `--duration` seconds measured.
 *   2. One session doing sequential turns for `--seq-duration` seconds (after a short warm-up).
 *   Measured time is cut into `--rounds` slices that alternate between the servers (ABBA), so a
 *   busy neighbour on the machine weighs on both alike; the ratios are what the targets are about.
 *
 * Targets (issue 2, item 11): relay throughput >= 60% of the baseline's at 100 sessions, relay
 * sequential p50 <= 1.5x the baseline's, and every event durable (counted in the log afterwards).
 * Exits 1 if a target is missed or a check fails.
 *
 * BENCH_NODE_ARGS: extra node flags for the relay child, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
 * (the temp dir is then kept and the relay is stopped with SIGTERM so the profile gets written).
 */
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { percentile, processCpuMs, startServer, stopServer, type ServerChild } from './lib.js';

const USAGE = `usage: npm run bench -- [--sessions N] [--duration S] [--warmup S] [--seq-duration S]
  --sessions N       concurrent sessions in the throughput phase (default 100)
  --duration S       measured seconds of the throughput phase, per server (default 10)
  --warmup S         unmeasured seconds before it (default 2)
  --seq-duration S   measured seconds of the sequential phase, per server (default 3)
  --rounds N         the measured seconds are split into N slices per server, alternating servers (default 5)
  env BENCH_NODE_ARGS  extra node flags for the relay child (e.g. --cpu-prof --cpu-prof-dir=DIR)`;

const TARGET_THROUGHPUT_RATIO = 0.6;
const TARGET_SEQ_P50_RATIO = 1.5;
/** A turn not finished after this long fails the run rather than hang it. */
const TURN_TIMEOUT_MS = 10_000;
/** After the measured window, in-flight turns get this long to finish. */
const DRAIN_MS = 15_000;
const SEQ_WARMUP_MS = 500;
/** Bounds every loop by count as well as time. */
const MAX_TURNS_PER_SESSION = 1_000_000;

function option(values: Record<string, string | boolean | undefined>, name: string, fallback: number, min: number, max: number): number {
  const text = values[name];
  if (text === undefined) return fallback;
  const n = Number(text);
  if (typeof text !== 'string' || !Number.isFinite(n) || n < min || n > max) {
    console.error(`--${name} must be a number from ${min} to ${max}\n${USAGE}`);
    process.exit(2);
  }
  return n;
}

const { values } = parseArgs({
  options: {
    sessions: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    'seq-duration': { type: 'string' },
    rounds: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
  strict: true,
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const SESSIONS = Math.floor(option(values, 'sessions', 100, 1, 1000));
const DURATION_MS = option(values, 'duration', 10, 0.5, 120) * 1000;
const WARMUP_MS = option(values, 'warmup', 2, 0, 30) * 1000;
const SEQ_DURATION_MS = option(values, 'seq-duration', 3, 0.5, 60) * 1000;
const ROUNDS = Math.floor(option(values, 'rounds', 5, 1, 50));

const now = () => performance.now();

// ---- the load generator --------------------------------------------------------------------------

interface Target {
  readonly name: string;
  readonly server: ServerChild;
  readonly authorization: string;
  /** Keep-alive sockets for the POSTs: a closed loop keeps at most one in flight per session. */
  readonly agent: http.Agent;
  /** Totals over every phase, for the durability check. */
  accepted: number;
  terminalFrames: number;
  progressFrames: number;
}

interface Turn {
  readonly taskId: string;
  readonly text: string;
  readonly sentAt: number;
  frameAt: number;
  posted: boolean;
  framed: boolean;
  readonly done: (error?: Error) => void;
}

/** One session: one SSE reader and at most one turn in flight. */
class BenchSession {
  private buffer = '';
  private count = 0;
  private opened = false;
  private request: http.ClientRequest | undefined;
  current: Turn | undefined;
  failure: Error | undefined;

  constructor(
    private readonly target: Target,
    readonly id: string,
  ) {}

  /** Opens the reader and resolves on `: open`, so no reply of the first turn can be missed. */
  open(): Promise<void> {
    const { url } = this.target.server;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.id}: stream did not open`)), TURN_TIMEOUT_MS);
      const request = http.get(
        {
          host: url.hostname,
          port: url.port,
          path: `/v1/events?session_id=${encodeURIComponent(this.id)}`,
          headers: { authorization: this.target.authorization, accept: 'text/event-stream' },
          agent: false,
        },
        (response) => {
          if (response.statusCode !== 200) {
            clearTimeout(timer);
            response.resume();
            reject(new Error(`${this.id}: GET /v1/events answered ${response.statusCode}`));
            return;
          }
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            this.feed(chunk);
            if (this.opened) {
              clearTimeout(timer);
              resolve();
            }
          });
          response.on('close', () => this.fail(new Error(`${this.id}: stream closed by the server`)));
        },
      );
      request.on('error', (error) => {
        clearTimeout(timer);
        if (!this.opened) reject(error);
        else this.fail(error);
      });
      this.request = request;
    });
  }

  close(): void {
    const request = this.request;
    this.request = undefined;
    this.opened = false;
    request?.destroy();
  }

  private fail(error: Error): void {
    if (this.request === undefined) return; // closing on purpose
    this.failure ??= error;
    const turn = this.current;
    this.current = undefined;
    turn?.done(error);
  }

  /** SSE framing, just enough for our frames: comments, `data:` (progress), `id:` + `data:` (terminal). */
  private feed(chunk: string): void {
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      if (block.startsWith(':')) {
        if (block === ': open') this.opened = true;
      } else if (block.startsWith('data: ')) {
        this.target.progressFrames += 1;
      } else if (block.startsWith('id: ')) {
        const nl = block.indexOf('\ndata: ');
        this.terminal(nl < 0 ? '' : block.slice(nl + 7));
      } else {
        this.fail(new Error(`${this.id}: unexpected frame ${JSON.stringify(block).slice(0, 200)}`));
      }
    }
  }

  private terminal(data: string): void {
    const at = now();
    this.target.terminalFrames += 1;
    const turn = this.current;
    let reply: { task_id?: unknown; status?: unknown; reply_text?: unknown };
    try {
      reply = JSON.parse(data) as typeof reply;
    } catch {
      return this.fail(new Error(`${this.id}: terminal frame data is not JSON: ${data.slice(0, 200)}`));
    }
    if (turn === undefined || reply.task_id !== turn.taskId) {
      return this.fail(new Error(`${this.id}: terminal frame for ${String(reply.task_id)}, expected ${turn?.taskId}`));
    }
    if (reply.status !== 'message' || reply.reply_text !== turn.text) {
      return this.fail(new Error(`${this.id}: wrong reply ${data.slice(0, 200)}`));
    }
    turn.frameAt = at;
    turn.framed = true;
    if (turn.posted) this.finish(turn);
  }

  private finish(turn: Turn): void {
    this.current = undefined;
    turn.done();
  }

  /** One turn; resolves with the turn (its latency is frameAt - sentAt). */
  turn(): Promise<Turn> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    this.count += 1;
    const taskId = `t${this.count}`;
    const text = `hello ${this.count}`;
    const body = JSON.stringify({ session_id: this.id, task_id: taskId, text });
    const { url } = this.target.server;
    return new Promise<Turn>((resolve, reject) => {
      const turn: Turn = {
        taskId,
        text,
        sentAt: now(),
        frameAt: 0,
        posted: false,
        framed: false,
        done: (error) => (error === undefined ? resolve(turn) : reject(error)),
      };
      this.current = turn;
      const request = http.request(
        {
          agent: this.target.agent,
          host: url.hostname,
          port: url.port,
          method: 'POST',
          path: '/v1/incoming',
          headers: {
            authorization: this.target.authorization,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (response) => {
          if (response.statusCode !== 202) {
            let text = '';
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => (text += chunk));
            response.on('end', () => this.fail(new Error(`${this.id}: POST answered ${response.statusCode} ${text.slice(0, 200)}`)));
            return;
          }
          this.target.accepted += 1;
          response.resume();
          response.on('end', () => {
            turn.posted = true;
            if (turn.framed && this.current === turn) this.finish(turn);
          });
        },
      );
      request.on('error', (error) => this.fail(error));
      request.end(body);
    });
  }

  /** The turn in flight has run past the timeout. */
  stuck(at: number): boolean {
    return this.current !== undefined && at - this.current.sentAt > TURN_TIMEOUT_MS;
  }

  timeout(): void {
    this.fail(new Error(`${this.id}: turn ${this.current?.taskId} unfinished after ${TURN_TIMEOUT_MS} ms`));
  }
}

interface Summary {
  readonly turns: number;
  readonly seconds: number;
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
  /** Server CPU (user + system) per measured turn, in ms: the cost of a turn, whatever else runs. */
  readonly serverCpuPerTurn: number | undefined;
  /** This process's CPU over the windows, in percent of one core: near 100 means the client is the limit. */
  readonly clientCpuPercent: number;
}

/**
 * A set of open sessions on one server, driven in closed loops for a slice of time at a time. The
 * bench alternates short slices of the two servers, so that whatever else runs on the machine weighs
 * on both alike; measured slices add up to one result.
 */
class Load {
  private readonly sessions: BenchSession[];
  private readonly latencies: number[] = [];
  private windowMs = 0;
  private serverCpuMs: number | undefined = 0;
  private clientCpuUs = 0;

  constructor(
    readonly target: Target,
    readonly label: string,
    count: number,
  ) {
    const tag = randomBytes(4).toString('hex');
    this.sessions = Array.from({ length: count }, (_, i) => new BenchSession(target, `bench-${target.name}-${label}-${tag}-${i}`));
  }

  open(): Promise<void[]> {
    return Promise.all(this.sessions.map((s) => s.open()));
  }

  close(): void {
    for (const s of this.sessions) s.close();
  }

  /** Turns in closed loops for `ms`; if `measure`, the turns whose terminal frame is read inside count. */
  async slice(ms: number, measure: boolean): Promise<void> {
    const pid = this.target.server.child.pid!;
    const from = { server: processCpuMs(pid), client: process.cpuUsage(), at: now() };
    const until = from.at + ms;
    let to: typeof from | undefined;
    const sampler = setTimeout(() => (to = { server: processCpuMs(pid), client: process.cpuUsage(), at: now() }), ms);
    const watchdog = setInterval(() => {
      const at = now();
      for (const s of this.sessions) if (s.stuck(at)) s.timeout();
    }, 500);
    try {
      await Promise.all(
        this.sessions.map(async (s) => {
          for (let i = 0; i < MAX_TURNS_PER_SESSION && now() < until; i++) {
            const turn = await s.turn();
            if (measure && turn.frameAt <= until) this.latencies.push(turn.frameAt - turn.sentAt);
          }
        }),
      );
    } finally {
      clearTimeout(sampler);
      clearInterval(watchdog);
    }
    if (now() > until + DRAIN_MS) throw new Error(`${this.target.name} ${this.label}: in-flight turns took over ${DRAIN_MS} ms to drain`);
    if (!measure) return;
    to ??= { server: processCpuMs(pid), client: process.cpuUsage(), at: now() };
    this.windowMs += to.at - from.at;
    this.serverCpuMs =
      this.serverCpuMs === undefined || from.server === undefined || to.server === undefined
        ? undefined
        : this.serverCpuMs + to.server - from.server;
    this.clientCpuUs += to.client.user + to.client.system - from.client.user - from.client.system;
  }

  summary(): Summary {
    const sorted = Float64Array.from(this.latencies).sort();
    return {
      turns: sorted.length,
      seconds: this.windowMs / 1000,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
      serverCpuPerTurn: this.serverCpuMs === undefined ? undefined : this.serverCpuMs / Math.max(1, sorted.length),
      clientCpuPercent: (this.clientCpuUs / 1000 / Math.max(1, this.windowMs)) * 100,
    };
  }
}

/** Warm-up of each, then `rounds` measured slices of each, alternating which goes first (ABBA...). */
async function interleave(loads: readonly Load[], warmupMs: number, measuredMs: number, rounds: number): Promise<void> {
  for (const load of loads) await load.slice(warmupMs, false);
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? loads : [...loads].reverse();
    for (const load of order) await load.slice(measuredMs / rounds, true);
  }
}

// ---- the run -------------------------------------------------------------------------------------

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'dist/adapters/cli/main.js');
if (!existsSync(cli)) {
  console.error(`bench: ${cli} is missing; run npm run bench (it builds first)`);
  process.exit(2);
}
const relayNodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(/\s+/).filter((a) => a.length > 0);
const profiling = relayNodeArgs.length > 0;
const tmp = mkdtempSync(join(tmpdir(), 'assistant-relay-bench-'));
const dbPath = join(tmp, 'relay.db');
const token = randomBytes(18).toString('base64url');
// However the bench ends (signals included, see lib.ts), the temp dir goes, unless a profile is in it.
process.on('exit', () => {
  if (!profiling) rmSync(tmp, { recursive: true, force: true });
});

// The whole run is bounded even if something wedges: every phase, plus start-up and drain slack.
const budgetMs = 2 * (WARMUP_MS + DURATION_MS + SEQ_WARMUP_MS + SEQ_DURATION_MS + 2 * DRAIN_MS) + 60_000;
const watchdog = setTimeout(() => {
  console.error(`bench: still running after ${Math.round(budgetMs / 1000)} s; giving up`);
  process.exit(3);
}, budgetMs);

function target(name: string, server: ServerChild): Target {
  return {
    name,
    server,
    authorization: `Bearer ${token}`,
    agent: new http.Agent({ keepAlive: true, maxSockets: SESSIONS + 8, noDelay: true }),
    accepted: 0,
    terminalFrames: 0,
    progressFrames: 0,
  };
}

const fmt = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

let failed = false;
let relay: Target | undefined;
let baseline: Target | undefined;
try {
  const [relayServer, baselineServer] = await Promise.all([
    startServer(
      'relay',
      [...relayNodeArgs, cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', dbPath, '--token', token, '--agent', 'echo'],
      // Its cwd is the temp dir, so a --cpu-prof without a dir lands there, not in the repository.
      { cwd: tmp, stderrPath: join(tmp, 'relay.stderr.log'), timeoutMs: 20_000 },
    ),
    startServer('baseline', ['--import', 'tsx', join(root, 'bench/baseline.ts'), '--port', '0', '--token', token], {
      cwd: root,
      stderrPath: join(tmp, 'baseline.stderr.log'),
      timeoutMs: 20_000,
    }),
  ]);
  relay = target('relay', relayServer);
  baseline = target('baseline', baselineServer);

  console.log(
    `assistant-relay bench · node ${process.version} · ${availableParallelism()} CPUs · ${SESSIONS} sessions, ` +
      `${WARMUP_MS / 1000} s warm-up + ${DURATION_MS / 1000} s measured · sequential ${SEQ_DURATION_MS / 1000} s · ` +
      `${ROUNDS} alternating rounds · load average ${loadavg()[0]!.toFixed(2)}` +
      (profiling ? ` · relay node args: ${relayNodeArgs.join(' ')}` : ''),
  );
  const concurrent = [new Load(baseline, 'c', SESSIONS), new Load(relay, 'c', SESSIONS)];
  const sequential = [new Load(baseline, 's', 1), new Load(relay, 's', 1)];
  const loads = [...concurrent, ...sequential];
  await Promise.all(loads.map((l) => l.open()));
  // Each server is measured while the other idles, in alternating slices (see Load).
  await interleave(concurrent, WARMUP_MS, DURATION_MS, ROUNDS);
  await interleave(sequential, SEQ_WARMUP_MS, SEQ_DURATION_MS, ROUNDS);
  for (const l of loads) l.close();
  const [cBase, cRelay, sBase, sRelay] = loads.map((l) => l.summary()) as [Summary, Summary, Summary, Summary];

  console.log('');
  console.log('server    phase          turns/s   p50 ms   p99 ms  mean ms  server CPU ms/turn  client CPU');
  const row = (name: string, phase: string, r: Summary) =>
    console.log(
      `${name.padEnd(9)} ${phase.padEnd(13)} ${fmt(r.turns / r.seconds, 0).padStart(8)} ${fmt(r.p50, 3).padStart(8)} ` +
        `${fmt(r.p99, 3).padStart(8)} ${fmt(r.mean, 3).padStart(8)} ${(r.serverCpuPerTurn === undefined ? 'n/a' : fmt(r.serverCpuPerTurn, 3)).padStart(19)} ` +
        `${fmt(r.clientCpuPercent, 0).padStart(9)}%`,
    );
  row('baseline', `${SESSIONS} sessions`, cBase);
  row('relay', `${SESSIONS} sessions`, cRelay);
  row('baseline', 'sequential', sBase);
  row('relay', 'sequential', sRelay);
  const throughputRatio = cRelay.turns / cRelay.seconds / (cBase.turns / cBase.seconds);
  const seqRatio = sRelay.p50 / sBase.p50;
  const okThroughput = throughputRatio >= TARGET_THROUGHPUT_RATIO;
  const okSeq = seqRatio <= TARGET_SEQ_P50_RATIO;
  console.log('');
  console.log(`throughput at ${SESSIONS} sessions, relay / baseline: ${fmt(throughputRatio, 2)}  (target >= ${TARGET_THROUGHPUT_RATIO.toFixed(2)})  ${okThroughput ? 'MET' : 'MISSED'}`);
  console.log(`sequential p50, relay / baseline:        ${fmt(seqRatio, 2)}x (target <= ${TARGET_SEQ_P50_RATIO.toFixed(1)}x)   ${okSeq ? 'MET' : 'MISSED'}`);
  if (!okThroughput || !okSeq) failed = true;
  const load = loadavg()[0]!;
  if (load > availableParallelism()) {
    // Both servers share the CPUs with whatever else runs; alternating slices spreads that, not removes it.
    console.log(
      `note: load average ${load.toFixed(2)} on ${availableParallelism()} CPUs: other processes compete for the CPUs, so figures are ` +
        'noisy; server CPU ms/turn is the steadier comparison',
    );
  }

  // Durability: read the log while the relay still runs, so nothing its shutdown flushes can count.
  // Every 202 the client got must be a task.started row, every terminal frame it read a task.settled row.
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  const byType = new Map<string, number>();
  try {
    for (const row of db.prepare('SELECT type, count(*) AS n FROM events GROUP BY type').all() as Array<{ type: string; n: number }>) {
      byType.set(row.type, row.n);
    }
  } finally {
    db.close();
  }
  const total = [...byType.values()].reduce((a, b) => a + b, 0);
  const started = byType.get('task.started') ?? 0;
  const settled = byType.get('task.settled') ?? 0;
  const turns = relay.terminalFrames;
  const durable = started === relay.accepted && settled === relay.terminalFrames;
  console.log(
    `relay log: ${total} events for ${turns} turns = ${fmt(total / Math.max(1, turns), 3)} events/turn ` +
      `(${[...byType].map(([type, n]) => `${type} ${n}`).join(', ')})`,
  );
  console.log(
    `durable: ${relay.accepted} POSTs answered 202 / ${started} task.started; ${relay.terminalFrames} terminal frames read / ` +
      `${settled} task.settled; ${relay.progressFrames} typing frames read  ${durable ? 'OK' : 'MISMATCH'}`,
  );
  if (!durable) failed = true;
} catch (error) {
  failed = true;
  console.error(`bench failed: ${(error as Error).stack ?? String(error)}`);
} finally {
  const stopped = await Promise.all(
    [relay, baseline].flatMap((t) => (t === undefined ? [] : [stopServer(t.server, 10_000).then((how) => `${t.name} ${how}`)])),
  );
  for (const t of [relay, baseline]) t?.agent.destroy();
  clearTimeout(watchdog);
  if (profiling) console.log(`stopped: ${stopped.join(', ')}; relay files kept in ${tmp}`);
}
process.exitCode = failed ? 1 : 0;
