/**
 * The scale-out section of BENCHMARKS.md and its chart (issue 25): jobs/s and the nodes' CPU per job
 * through three quota-held nodes against one, the targets checked on figures of the same run, the
 * machine's busy cores beside them, and whether every job ended exactly once; and jobs/s through one node
 * against the issue's starting point.
 */
import { barChart, formatValue } from './chart.js';
import { targetRow, type Target } from './report.js';
import type { JobsRow, ScaleoutResults, ScaleoutRow } from './results.js';
import { STARTING_POINT } from './starting-point.js';

const rowsAt = (results: ScaleoutResults | undefined, nodes: number) => results?.rows.filter((row) => row.nodes === nodes) ?? [];
const quotasOf = (results: ScaleoutResults | undefined) => [...new Set(results?.rows.map((row) => row.quota) ?? [])];
const x = (value: number | undefined) => (value === undefined || !Number.isFinite(value) ? 'n/a' : `${value.toFixed(2)}x`);

/** Issue 25's targets, for each quota the run measured: three nodes against one. */
export function scaleoutTargets(results: ScaleoutResults | undefined): Target[] {
  const quotas = quotasOf(results);
  if (quotas.length === 0) quotas.push(Number.NaN);
  return quotas.flatMap((quota) => {
    const one = rowsAt(results, 1).find((row) => row.quota === quota);
    const three = rowsAt(results, 3).find((row) => row.quota === quota);
    const held = Number.isNaN(quota) ? '' : `, each node held to ${quota} of a core`;
    const speedup = one && three ? three.jobsPerSecond.median / one.jobsPerSecond.median : undefined;
    const cpu = one && three ? three.nodeCpuUsPerJob / one.nodeCpuUsPerJob : undefined;
    return [
      {
        what: `Jobs/s through three nodes against one${held}`,
        goal: '≥ 2.5x',
        measured: x(speedup),
        met: speedup === undefined ? undefined : speedup >= 2.5,
      },
      {
        what: `Nodes' summed CPU per job, three nodes against one${held}`,
        goal: '≤ 1.25x',
        measured: x(cpu),
        met: cpu === undefined ? undefined : cpu <= 1.25,
      },
    ];
  });
}

/** Issue 25's other target: jobs/s through one node now against one of its starting point, at each concurrency, in the same run. */
export function startingPointTargets(jobs: readonly JobsRow[]): Target[] {
  return jobs
    .filter((row) => row.setup === 'postgres, 1 node, starting point')
    .map((start) => {
      const now = jobs.find((row) => row.setup === 'postgres, 1 node' && row.concurrency === start.concurrency);
      const ratio = now === undefined ? undefined : now.jobsPerSecond.median / start.jobsPerSecond.median;
      return {
        what: `Jobs/s through one node at ${start.concurrency} concurrent, against issue 25's starting point (${STARTING_POINT})`,
        goal: '≥ 1x',
        measured: x(ratio),
        met: ratio === undefined || !Number.isFinite(ratio) ? undefined : ratio >= 1,
      };
    });
}

const endings = (row: ScaleoutRow) => {
  const wrong = row.neverEnded + row.endedTwice;
  const said = `${row.endedOnce.toLocaleString('en-US')} of ${row.jobs.toLocaleString('en-US')}`;
  return wrong === 0 && row.endedOnce === row.jobs ? `${said} ✓` : `**${said}**: ${row.neverEnded} never, ${row.endedTwice} more than once`;
};

export function scaleoutSection(results: ScaleoutResults): string[] {
  const out = ['## Scale-out (issue 25)', ''];
  if (results.skipped !== undefined) return [...out, `Not measured in this run: ${results.skipped}.`, ''];
  const first = results.rows[0];
  out.push(
    `Jobs a second through one backend node and through three (PostgreSQL with ${results.broker}, a fresh schema and namespace each), every node process held to the same share of a core by a cgroup v1 CPU quota, so that on one machine a node's quota, not the machine, is the bound; PostgreSQL, the broker, the plugins and the clients are not held. ${first === undefined ? '' : `${first.integrations} integrations, each with its own plugin process (\`builtin\` reasoner) and a client keeping ${first.inFlight} jobs in flight. `}Routing: ${results.routing}. The nodes' CPU is their processes' user and system time (/proc), summed over the nodes; "throttled" is the share of quota periods in which a node was held back; the machine's busy cores (/proc/stat) show whether it, rather than the quota, was the bound. "Ended once" asks the store, for every job created, how many terminal events it holds.`,
    '',
    '| nodes × quota | jobs/s, median (min–max) | p50 ms | p99 ms | nodes CPU µs/job | nodes use, cores | throttled | machine busy, cores | plugins, cores | clients, cores | ended once | not completed |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const row of results.rows) {
    // Busy, whoever kept it so: then the quota was not the only bound (see how often it throttled).
    const busy = row.busyCores.median >= row.cores * 0.9 ? ' **fully busy**' : '';
    out.push(
      `| ${row.nodes} × ${row.quota} | ${formatValue(row.jobsPerSecond.median)} (${row.jobsPerSecond.min.toFixed(0)}–${row.jobsPerSecond.max.toFixed(0)}) | ${row.p50Ms.toFixed(1)} | ${row.p99Ms.toFixed(1)} | ${formatValue(row.nodeCpuUsPerJob)} | ${row.nodeCores.toFixed(2)} of ${(row.nodes * row.quota).toFixed(2)} | ${(row.throttledShare * 100).toFixed(0)}% | ${row.busyCores.median.toFixed(2)} of ${row.cores}${busy} | ${row.pluginCores.toFixed(2)} | ${row.generatorCores.toFixed(2)} | ${endings(row)} | ${row.notCompleted} |`,
    );
  }
  out.push('', '| target | goal | measured | |', '|---|---|---|---|');
  out.push(...scaleoutTargets(results).map(targetRow));
  const missed = scaleoutTargets(results).filter((target) => target.met === false);
  if (missed.length > 0)
    out.push('', ...missed.map((target) => `Target missed: ${target.what}: ${target.measured} (goal ${target.goal}).`));
  out.push('', '![scale-out](bench/results/scaleout.svg)', '');
  return out;
}

export function scaleoutChart(results: ScaleoutResults | undefined): Record<string, string> {
  if (results === undefined || results.rows.length === 0) return {};
  return {
    'scaleout.svg': barChart({
      title: 'Jobs per second, every node held to the same CPU quota',
      unit: 'jobs/s',
      groups: quotasOf(results).map((quota) => ({
        label: `${quota} of a core a node`,
        bars: results.rows
          .filter((row) => row.quota === quota)
          .map((row) => ({ label: `${row.nodes} node${row.nodes > 1 ? 's' : ''}`, value: row.jobsPerSecond.median })),
      })),
    }),
  };
}
