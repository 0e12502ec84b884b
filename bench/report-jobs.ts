/**
 * The reasoning channel's section of BENCHMARKS.md and its chart: jobs/s, latency and CPU per job of the
 * relay's setups and of the job baselines (issue 26), with issue 26's job targets stated against them and
 * issue 25's against its starting point.
 */
import { barChart, formatValue } from './chart.js';
import { ms, range, ratio, targetRow, x, type Target } from './report-common.js';
import { startingPointTargets } from './report-scaleout.js';
import type { JobsRow } from './results.js';

const DURABLE = 'baseline: fastify + SQLite, durable';
/** Today's jobs/s at 100 at once on the embedded log, the figure issue 26's 3x is counted from. */
const TODAY = { jobsPerSecond: 658, from: "BENCHMARKS.md's run of 2026-11-24T07:01:45Z, embedded, 100 concurrent jobs" };

const setupOf = (row: JobsRow) => row.setup ?? 'embedded';
const rowOf = (jobs: readonly JobsRow[], setup: string, concurrency: number) =>
  jobs.find((row) => setupOf(row) === setup && row.concurrency === concurrency);
const us = (value: number | undefined) => (value === undefined || !Number.isFinite(value) ? 'n/a' : `${formatValue(value)} µs`);

/** Issue 26's job targets: the embedded log against the durable job baseline and today's figure, its latency and the plugin's CPU. */
export function jobTargets(jobs: readonly JobsRow[]): Target[] {
  const at100 = rowOf(jobs, 'embedded', 100);
  const against = ratio(at100?.jobsPerSecond.median, rowOf(jobs, DURABLE, 100)?.jobsPerSecond.median);
  const againstToday = ratio(at100?.jobsPerSecond.median, TODAY.jobsPerSecond);
  const one = rowOf(jobs, 'embedded', 1)?.p50Ms;
  const busiest = jobs.filter((row) => setupOf(row) === 'embedded').sort((a, b) => b.concurrency - a.concurrency)[0];
  const plugin = busiest?.pluginCpuUsPerJob;
  return [
    {
      what: 'Jobs/s at 100 at once on the embedded log, against the durable job baseline',
      goal: '≥ 0.5x',
      measured: x(against),
      met: against === undefined ? undefined : against >= 0.5,
    },
    {
      what: `Jobs/s at 100 at once on the embedded log, against today's ${TODAY.jobsPerSecond} (${TODAY.from})`,
      goal: '≥ 3x',
      measured: x(againstToday),
      met: againstToday === undefined ? undefined : againstToday >= 3,
    },
    {
      what: 'Job p50 one at a time, on the embedded log',
      goal: '≤ 2 ms',
      measured: one === undefined || !Number.isFinite(one) ? 'n/a' : `${ms(one)} ms`,
      met: one === undefined || !Number.isFinite(one) ? undefined : one <= 2,
    },
    {
      what: `The plugin's CPU per job, \`builtin\` reasoner, on the embedded log${busiest === undefined ? '' : ` at ${busiest.concurrency} at once`}`,
      goal: '≤ 500 µs',
      measured: us(plugin),
      met: plugin === undefined ? undefined : plugin <= 500,
    },
    ...['embedded', 'postgres, 1 node'].map((setup) => byoTarget(jobs, setup)),
  ];
}

/** A BYO job's CPU (the backend's and the plugin's together) against a plain one's, on `setup`, at the most jobs at once both ran. */
function byoTarget(jobs: readonly JobsRow[], setup: string): Target {
  const cpu = (row: JobsRow | undefined) =>
    row?.serverCpuUsPerJob === undefined || row.pluginCpuUsPerJob === undefined ? undefined : row.serverCpuUsPerJob + row.pluginCpuUsPerJob;
  const concurrency = Math.max(...jobs.filter((row) => setupOf(row) === `${setup}, BYO`).map((row) => row.concurrency));
  const plain = cpu(rowOf(jobs, setup, concurrency));
  const byo = cpu(rowOf(jobs, `${setup}, BYO`, concurrency));
  const against = ratio(byo, plain);
  return {
    what: `CPU of a BYO job against a plain one (the backend's and the plugin's), ${setup}${Number.isFinite(concurrency) ? `, ${concurrency} at once` : ''}`,
    goal: '≤ 1.1x',
    measured: against === undefined ? 'n/a' : `${x(against)} (${us(byo)} against ${us(plain)})`,
    met: against === undefined ? undefined : against <= 1.1,
  };
}

export function jobsSection(jobs: readonly JobsRow[]): string[] {
  const out = [
    '## The reasoning channel',
    '',
    "Jobs a second from a client through the backend relay, to the plugin and its reasoner, and the result back to the client: on the embedded SQLite log, and on PostgreSQL with NATS through one node and through three (the client sends each request to the next node; the plugin streams from the first). On one machine the three nodes share its cores with PostgreSQL, NATS, the plugin and the client: the figure shows what crossing nodes costs, not what more machines add. The baselines (issue 26) do the same round trip (create, delivery on the plugin's SSE stream, `running`, result, the follower's SSE frames) with nothing else: a bare `node:http` server keeping jobs in memory, and fastify 5 committing every create, delivery, `running` and result to a SQLite table (WAL, `synchronous=NORMAL`, one transaction per event-loop turn) before it is answered or sent (bench/baselines/). Their plugin is a minimal one in the bench process, posting a fixed result: its CPU is not counted, and theirs is the server's alone. Server CPU is the backend processes' own (all nodes together); plugin CPU the plugin process's.",
    '',
    '| backend | concurrent jobs | jobs/s, median (min–max) | vs durable baseline | p50 ms | p99 ms | server CPU per job | plugin CPU per job |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const row of jobs) {
    const durable = rowOf(jobs, DURABLE, row.concurrency);
    const plugin = setupOf(row).startsWith('baseline') ? 'in the bench process' : us(row.pluginCpuUsPerJob);
    out.push(
      `| ${setupOf(row)} | ${row.concurrency} | ${range(row.jobsPerSecond)} | ${x(ratio(row.jobsPerSecond.median, durable?.jobsPerSecond.median))} | ${ms(row.p50Ms)} | ${ms(row.p99Ms)} | ${us(row.serverCpuUsPerJob)} | ${plugin} |`,
    );
  }
  out.push('', '### Targets (issue 26)', '', '| target | goal | measured | |', '|---|---|---|---|', ...jobTargets(jobs).map(targetRow));
  const againstStart = startingPointTargets(jobs);
  if (againstStart.length > 0) out.push('', '| target | goal | measured | |', '|---|---|---|---|', ...againstStart.map(targetRow));
  out.push('', '![jobs](bench/results/jobs.svg)', '');
  return out;
}

export function jobsChart(jobs: readonly JobsRow[]): Record<string, string> {
  return {
    'jobs.svg': barChart({
      title: 'Reasoning jobs per second (backend → plugin → result)',
      unit: 'jobs/s',
      groups: [...new Set(jobs.map((row) => row.concurrency))].map((concurrency) => ({
        label: `${concurrency} concurrent`,
        bars: jobs
          .filter((row) => row.concurrency === concurrency)
          .map((row) => ({ label: setupOf(row), value: row.jobsPerSecond.median })),
      })),
    }),
  };
}
