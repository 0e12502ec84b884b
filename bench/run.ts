/**
 * `npm run bench`: assistant-relay against the floor, the durable baseline and the peers (MCP Streamable HTTP, A2A streaming),
 * side by side in one run, and the relay's own figures (resume, idle streams, restart, the log, the
 * reasoning channel, a quiet tenant beside a hostile one, scale-out over quota-held backend nodes, a node's
 * memory against the integrations in the store). Writes BENCHMARKS.md and a chart a scenario
 * (bench/results/*.svg), and prints the targets. Each contender is a server process of its own, driven by
 * load generator processes.
 *
 *   npm run bench                 everything (about 14 minutes on 2 cores)
 *   npm run bench -- --quick      a smoke test in under a minute, written to a temporary folder
 *   npm run bench -- --only turns,resume   some scenarios (written to a temporary folder too)
 *   npm run bench -- --out DIR    write BENCHMARKS.md and results/ under DIR
 *   npm run bench -- --only scaleout --quota 0.25   each scale-out node held to a quarter of a core (default 0.15)
 *   npm run bench -- --only memory   a node's memory with 100,000 integrations stored against 1,000
 *   npm run bench -- --only turns --contenders relay --against HEAD~1   this build's turns against another commit's, in the same rounds (an A/B)
 *   npm run bench -- --only jobs --setups 'embedded;embedded, BYO'   some job setups
 *
 * Exits 1 if a scenario could not run or our own contender failed; a missed target is reported, not an error.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, release, tmpdir, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CONTENDERS, NODE_ARGS, ROOT, SERVERS, relayAt, scratchDir, start, stop, type Running } from './contenders.js';
import { memoryTargets } from './report-memory.js';
import { charts, durableTargets, jobTargets, markdown, targets } from './report.js';
import { scaleoutTargets, startingPointTargets } from './report-scaleout.js';
import type {
  BenchResults,
  HostileRow,
  IdleRow,
  JobsRow,
  LogRow,
  Machine,
  MemoryResults,
  RestartRow,
  ResumeRow,
  ScaleoutResults,
} from './results.js';
import { hostile } from './scenarios/hostile.js';
import { idle } from './scenarios/idle.js';
import { JOBS_SETUPS, STARTING_POINT_SETUP, jobs } from './scenarios/jobs-run.js';
import { logAppends } from './scenarios/log.js';
import { memory } from './scenarios/memory.js';
import { restart } from './scenarios/restart.js';
import { resume } from './scenarios/resume.js';
import { scaleout } from './scenarios/scaleout.js';
import { buildStartingPoint, STARTING_POINT } from './starting-point.js';
import { turns, type TurnsSample } from './scenarios/turns.js';

const SCENARIOS = ['turns', 'resume', 'idle', 'restart', 'log', 'jobs', 'hostile', 'scaleout', 'memory'] as const;
type Scenario = (typeof SCENARIOS)[number];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    only: { type: 'string' },
    contenders: { type: 'string' },
    sessions: { type: 'string' },
    out: { type: 'string' },
    quota: { type: 'string' },
    against: { type: 'string' },
    setups: { type: 'string' },
    report: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
  strict: true,
});
if (values.help) {
  console.log(
    'usage: npm run bench -- [--quick] [--only turns,resume,idle,restart,log,jobs,hostile,scaleout,memory] [--contenders relay,floor,…] [--sessions 1,100] [--quota 0.15] [--against COMMIT] [--setups "A;B"] [--out DIR] [--report]',
  );
  console.log("  --against  the relay built at COMMIT too (turns and resume), beside this build's in the same rounds");
  console.log("  --setups   the job setups to run, named as BENCHMARKS.md's table names them, separated by ';'");
  console.log('  --quota    the share of a core each scale-out node is held to (default 0.15)');
  console.log('  --report   write BENCHMARKS.md and the charts again from bench/results/results.json (under --out), measuring nothing');
  process.exit(0);
}

/** The report and its charts, from one run's figures. */
function write(out: string, results: BenchResults): void {
  mkdirSync(join(out, 'bench/results'), { recursive: true });
  writeFileSync(join(out, 'BENCHMARKS.md'), markdown(results, readFileSync(join(ROOT, 'bench/diary.md'), 'utf8')));
  for (const [name, svg] of Object.entries(charts(results))) writeFileSync(join(out, 'bench/results', name), svg);
  writeFileSync(join(out, 'bench/results/results.json'), `${JSON.stringify(results, null, 2)}\n`);
}

if (values.report) {
  const out = values.out ?? ROOT;
  write(out, JSON.parse(readFileSync(join(out, 'bench/results/results.json'), 'utf8')) as BenchResults);
  console.log(`wrote ${join(out, 'BENCHMARKS.md')} again from its results.json`);
  process.exit(0);
}
const quick = values.quick === true;
const only = new Set((values.only?.split(',') ?? SCENARIOS) as Scenario[]);
for (const name of only) {
  if (!SCENARIOS.includes(name)) {
    console.error(`unknown scenario ${name}: one of ${SCENARIOS.join(', ')}`);
    process.exit(2);
  }
}
/** `--contenders relay,floor`: only these servers (by name), e.g. while profiling one against the floor. */
const chosen =
  values.contenders === undefined
    ? CONTENDERS
    : CONTENDERS.filter((contender) => values.contenders!.split(',').includes(contender.server.name));
const against = values.against === undefined ? undefined : buildStartingPoint(values.against);
const contenders = against === undefined ? chosen : [relayAt(values.against!, against.cli), ...chosen];
const partial =
  quick ||
  values.only !== undefined ||
  values.contenders !== undefined ||
  values.sessions !== undefined ||
  values.quota !== undefined ||
  values.setups !== undefined ||
  against !== undefined;
// Only a whole run replaces the repository's BENCHMARKS.md; a quick or partial one goes to a temporary folder.
const out = values.out ?? (partial ? mkdtempSync(join(tmpdir(), 'assistant-relay-bench-')) : ROOT);

/** How long each scenario runs: the full run's figures are for quoting, the quick run's only show that it works. */
const PLAN = quick
  ? {
      sessions: [1, 10],
      turns: { rounds: 1, sliceMs: 300, warmupMs: 200 },
      resume: { away: [10], rounds: 1 },
      idle: { streams: 200, settleMs: 300 },
      restart: { sizes: [10_000], rounds: 1, sessions: 1_000 },
      log: { sliceMs: 200, rounds: 1 },
      jobs: { setups: JOBS_SETUPS, concurrency: [1], warmupMs: 200, sliceMs: 500, rounds: 1 },
      // A shorter ReDoS result: a backend without linear-time checks stands still for about a second, not a minute.
      hostile: { phaseMs: 1_500, warmupMs: 300, inFlight: 2, redosLength: 24 },
      // One integration a node: the quick run shows the scenario works, not how it scales.
      scaleout: { nodes: [1, 3], integrations: 3, inFlight: 2, warmupMs: 300, sliceMs: 700, rounds: 1 },
      memory: { stored: [200, 2_000], active: 200, settleMs: 500 },
    }
  : {
      sessions: [1, 10, 100, 1_000],
      turns: { rounds: 4, sliceMs: 1_500, warmupMs: 1_000 },
      resume: { away: [10, 100, 1_000], rounds: 3 },
      idle: { streams: 10_000, settleMs: 2_000 },
      restart: { sizes: [10_000, 100_000, 1_000_000], rounds: 3, sessions: 1_000 },
      log: { sliceMs: 1_000, rounds: 3 },
      // One node of issue 25's starting point too, built from git (a minute): its jobs/s against one node now.
      jobs: { setups: [...JOBS_SETUPS, STARTING_POINT_SETUP], concurrency: [1, 100], warmupMs: 1_000, sliceMs: 2_000, rounds: 3 },
      hostile: { phaseMs: 10_000, warmupMs: 1_000, inFlight: 2, redosLength: 32 },
      scaleout: { nodes: [1, 3], integrations: 12, inFlight: 8, warmupMs: 3_000, sliceMs: 5_000, rounds: 3 },
      memory: { stored: [1_000, 100_000], active: 1_000, settleMs: 5_000 },
    };

if (values.setups !== undefined) {
  const named = values.setups.split(';').map((name) => name.trim());
  const known: readonly string[] = [...JOBS_SETUPS, STARTING_POINT_SETUP];
  const unknown = named.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    console.error(`unknown job setups ${unknown.join('; ')}: of ${known.join('; ')}`);
    process.exit(2);
  }
  PLAN.jobs = { ...PLAN.jobs, setups: known.filter((setup) => named.includes(setup)) as typeof PLAN.jobs.setups };
}

const machine: Machine = {
  cpu: cpus()[0]?.model ?? 'unknown',
  cores: availableParallelism(),
  memoryGiB: totalmem() / 2 ** 30,
  os: `${type()} ${release()}`,
  node: process.version,
  date: new Date().toISOString(),
  quick,
  versions: [...new Set(Object.values(SERVERS).map((server) => server.version))],
};

const sessions = values.sessions?.split(',').map(Number) ?? PLAN.sessions;
if (!sessions.every((count) => Number.isInteger(count) && count >= 1 && count <= 10_000)) {
  console.error(`--sessions takes counts from 1 to 10,000, comma-separated, not ${values.sessions}`);
  process.exit(2);
}
const quota = Number(values.quota ?? 0.15);
if (!(quota > 0 && quota <= 8)) {
  console.error(`--quota takes a share of a core, more than 0 and at most 8, not ${values.quota}`);
  process.exit(2);
}
const failures: string[] = [];
const step = async <T>(name: Scenario, run: () => Promise<T>, empty: T): Promise<T> => {
  if (!only.has(name)) return empty;
  const started = Date.now();
  console.log(`bench: ${name}…`);
  try {
    return await run();
  } catch (error) {
    failures.push(`${name}: ${(error as Error).message}`);
    console.error(`bench: ${name} failed: ${(error as Error).stack ?? String(error)}`);
    return empty;
  } finally {
    console.log(`bench: ${name} took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
};

const scratch = scratchDir();
const running = new Map<string, Running>();
let turnsResults: Array<{ sessions: number; samples: TurnsSample[] }> = [];
let resumeRows: ResumeRow[] = [];
try {
  if (only.has('turns') || only.has('resume')) {
    const servers = [...new Set(contenders.map((contender) => contender.server))];
    for (const each of await Promise.all(servers.map((server) => start(server, scratch)))) running.set(each.server.name, each);
  }
  turnsResults = await step('turns', () => turns(contenders, running, sessions, PLAN.turns), []);
  resumeRows = await step('resume', () => resume([...running.values()], PLAN.resume), []);
} finally {
  await Promise.all([...running.values()].map((each) => stop(each)));
  against?.remove();
}
const idleServers = [...new Set(contenders.map((contender) => contender.server))].filter((server) => server.name !== 'relay-memory');
const idleRows = await step<IdleRow[]>('idle', () => idle(idleServers, scratch, PLAN.idle), []);
const restartRows = await step<RestartRow[]>('restart', () => restart(PLAN.restart), []);
const logRows = await step<LogRow[]>('log', () => logAppends(PLAN.log), []);
const jobsRows = await step<JobsRow[]>(
  'jobs',
  async () => {
    if (!PLAN.jobs.setups.includes(STARTING_POINT_SETUP)) return jobs(PLAN.jobs);
    console.log(`bench: building the starting point ${STARTING_POINT}…`);
    const start = buildStartingPoint();
    try {
      return await jobs({ ...PLAN.jobs, startingPointCli: start.cli });
    } finally {
      start.remove();
    }
  },
  [],
);
const hostileRows = await step<HostileRow[]>('hostile', () => hostile(PLAN.hostile), []);
const scaleoutResults = await step<ScaleoutResults | undefined>('scaleout', () => scaleout({ ...PLAN.scaleout, quota }), undefined);
const memoryResults = await step<MemoryResults | undefined>('memory', () => memory(PLAN.memory), undefined);

const results: BenchResults = {
  machine,
  turns: turnsResults,
  resume: resumeRows,
  idle: idleRows,
  restart: restartRows,
  log: logRows,
  jobs: jobsRows,
  hostile: hostileRows,
  ...(scaleoutResults === undefined ? {} : { scaleout: scaleoutResults }),
  ...(memoryResults === undefined ? {} : { memory: memoryResults }),
  failures,
};
write(out, results);
// A profiling run keeps its servers' files (the profiles are written there); any other leaves nothing behind.
if (NODE_ARGS.length === 0) rmSync(scratch, { recursive: true, force: true });
else console.log(`bench: the servers' files, profiles included, are in ${scratch}`);

console.log(`\nwrote ${join(out, 'BENCHMARKS.md')} and ${join(out, 'bench/results/')}\n`);
for (const target of [
  ...targets(results),
  ...durableTargets(results),
  ...jobTargets(results.jobs),
  ...scaleoutTargets(results.scaleout),
  ...memoryTargets(results.memory),
  ...startingPointTargets(results.jobs),
])
  console.log(`${target.met === undefined ? '  ·' : target.met ? '  ✓' : '  ✗'} ${target.what}: ${target.measured} (goal ${target.goal})`);
const oursFailed = turnsResults.some(({ samples }) =>
  samples.some((sample) => sample.contender.server.name.startsWith('relay') && sample.failed !== undefined),
);
if (failures.length > 0 || oursFailed) process.exit(1);
process.exit(0);
