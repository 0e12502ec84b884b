/**
 * `npm run bench -- --quick` (issue 14), so that the bench cannot rot: every scenario runs, every
 * contender (ours, the floor, the durable baseline, MCP and A2A with their minimal and their own clients)
 * does its echo turns with its replies checked, the job baselines run beside the relay's setups, and the
 * report, its targets and its charts are written. Its figures are not asserted:
 * speed is the bench's to measure, not a test's.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { tempDir } from '../support/host.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Results {
  readonly turns: ReadonlyArray<{
    sessions: number;
    samples: ReadonlyArray<{ contender: { label: string }; turnsPerSecond: { median: number }; failed?: string }>;
  }>;
  readonly resume: ReadonlyArray<{ server: string; replayed?: number; note?: string }>;
  readonly idle: ReadonlyArray<{ server: string; kibPerStream?: number; note?: string }>;
  readonly restart: readonly unknown[];
  readonly log: readonly unknown[];
  readonly jobs: ReadonlyArray<{
    setup: string;
    jobsPerSecond: { median: number };
    serverCpuUsPerJob?: number;
    pluginCpuUsPerJob?: number;
  }>;
  readonly hostile: ReadonlyArray<{ attack: string; quiet: { completed: number }; attacker: Record<string, number> }>;
  readonly scaleout: {
    rows: ReadonlyArray<{ nodes: number; jobs: number; endedOnce: number; jobsPerSecond: { median: number } }>;
    skipped?: string;
  };
  readonly memory: { rows: ReadonlyArray<{ stored: number; active: number; held: number; rssMiB: number }> };
  readonly failures: readonly string[];
}

it('npm run bench -- --quick runs every scenario and every contender, and writes the report and its charts', async () => {
  const out = tempDir();
  dirs.push(out);
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--quick', '--out', out], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  expect(code, output.slice(-3_000)).toBe(0);

  const results = JSON.parse(readFileSync(`${out}/bench/results/results.json`, 'utf8')) as Results;
  expect(results.failures).toEqual([]);
  expect(results.turns.map((each) => each.sessions)).toEqual([1, 10]);
  const labels = results.turns[0]!.samples.map((sample) => sample.contender.label);
  expect(labels).toEqual([
    'assistant-relay (durable log)',
    'assistant-relay (log in :memory:)',
    'MCP Streamable HTTP',
    "MCP Streamable HTTP, its SDK's client",
    'A2A streaming',
    "A2A streaming, its SDK's client",
    'durable baseline (fastify + SQLite)',
    'floor (bare node:http)',
  ]);
  for (const { samples } of results.turns) {
    for (const sample of samples) {
      expect(sample.failed, sample.contender.label).toBeUndefined();
      expect(sample.turnsPerSecond.median, sample.contender.label).toBeGreaterThan(0);
    }
  }
  expect(results.resume.find((row) => row.server === 'relay')?.replayed).toBe(10);
  for (const row of results.idle) expect(typeof row.kibPerStream, `${row.server}: ${row.note ?? ''}`).toBe('number');
  for (const scenario of [results.restart, results.log, results.jobs]) expect(scenario.length).toBeGreaterThan(0);
  // The jobs: the relay's setups and both baselines (issue 26), each with jobs done and the server's CPU per job; the relay's plugin's too.
  expect(results.jobs.map((row) => row.setup)).toEqual([
    'embedded',
    'embedded, BYO',
    'postgres, 1 node',
    'postgres, 1 node, BYO',
    'postgres, 3 nodes',
    'baseline: node:http, in memory',
    'baseline: fastify + SQLite, durable',
  ]);
  for (const row of results.jobs) {
    expect(row.jobsPerSecond.median, row.setup).toBeGreaterThan(0);
    expect(typeof row.serverCpuUsPerJob, row.setup).toBe('number');
    expect(typeof row.pluginCpuUsPerJob, row.setup).toBe(row.setup.startsWith('baseline') ? 'undefined' : 'number');
  }
  // Every attack ran and was answered (whatever the status); with no attack, the quiet tenant's jobs completed.
  expect(results.hostile.map((row) => row.attack)).toEqual([
    'none',
    'redos',
    'oversize',
    'open-jobs',
    'followers',
    'heartbeat-flips',
    'rekeys',
    'pairing-churn',
    'pairing-hold',
  ]);
  expect(results.hostile[0]!.quiet.completed).toBeGreaterThan(0);
  for (const row of results.hostile.slice(1)) expect(Object.keys(row.attacker).length, row.attack).toBeGreaterThan(0);

  // Scale-out: skipped where no cgroup can be written; otherwise one node and three, every job ended once.
  if (results.scaleout.skipped === undefined) {
    expect(results.scaleout.rows.map((row) => row.nodes)).toEqual([1, 3]);
    for (const row of results.scaleout.rows) {
      expect(row.jobsPerSecond.median).toBeGreaterThan(0);
      expect(row.endedOnce).toBe(row.jobs);
    }
  }

  // Memory: the node holds the active integrations, whatever the store holds.
  expect(results.memory.rows.map((row) => row.stored)).toEqual([200, 2_000]);
  for (const row of results.memory.rows) {
    expect(row.held).toBe(row.active);
    expect(row.rssMiB).toBeGreaterThan(0);
  }

  const report = readFileSync(`${out}/BENCHMARKS.md`, 'utf8');
  for (const section of [
    '## Targets (issue 14)',
    '## Targets (issue 26)',
    '| Server CPU per turn at 100 sessions, against the durable baseline |',
    '| Jobs/s at 100 at once on the embedded log, against the durable job baseline |',
    '## Turns',
    '## Resume',
    '## Idle streams',
    '## Restart',
    '## The log',
    '## The reasoning channel',
    '## Hostile tenants',
    '## Scale-out (issue 25)',
    "## A node's memory against the store (issue 25)",
  ])
    expect(report).toContain(section);
  for (const chart of ['turns', 'cpu', 'resume', 'idle', 'restart', 'log', 'jobs', 'hostile'])
    expect(existsSync(`${out}/bench/results/${chart}.svg`), chart).toBe(true);
  if (results.scaleout.skipped === undefined) expect(existsSync(`${out}/bench/results/scaleout.svg`)).toBe(true);
}, 240_000);
