/**
 * The turns' part of BENCHMARKS.md: issue 14's targets against the floor and the peers, issue 26's against
 * the durable baseline, where ours loses, and a session count's table.
 */
import { formatValue } from './chart.js';
import { ms, range, ratio, x, type Target } from './report-common.js';
import type { BenchResults } from './results.js';
import type { TurnsSample } from './scenarios/turns.js';

const OURS = 'relay';
const FLOOR = 'floor';
const DURABLE = 'durable';
const PEERS = ['mcp', 'a2a'];

export const samplesAt = (results: BenchResults, sessions: number) =>
  results.turns.find((each) => each.sessions === sessions)?.samples ?? [];
const ok = (sample: TurnsSample | undefined) => (sample !== undefined && sample.failed === undefined ? sample : undefined);
export const minimalOf = (samples: readonly TurnsSample[], server: string) =>
  ok(samples.find((each) => each.contender.server.name === server && each.contender.client === 'minimal'));
/** A peer's server at its best: whichever of its clients drove it faster. */
const bestOf = (samples: readonly TurnsSample[], server: string) =>
  samples
    .filter((each) => each.contender.server.name === server && each.failed === undefined)
    .sort((a, b) => b.turnsPerSecond.median - a.turnsPerSecond.median)[0];

export function targets(results: BenchResults): Target[] {
  const at100 = samplesAt(results, 100);
  const ours100 = minimalOf(at100, OURS);
  const floor100 = minimalOf(at100, FLOOR);
  const list: Target[] = [];
  const throughput = ratio(ours100?.turnsPerSecond.median, floor100?.turnsPerSecond.median);
  list.push({
    what: 'Throughput at 100 sessions, against the floor',
    goal: '≥ 0.6x',
    measured: x(throughput),
    met: throughput === undefined ? undefined : throughput >= 0.6,
  });
  for (const peer of PEERS) {
    const best = bestOf(at100, peer);
    const against = ratio(ours100?.turnsPerSecond.median, best?.turnsPerSecond.median);
    list.push({
      what: `Throughput at 100 sessions, against ${best?.contender.server.title ?? peer}'s server`,
      goal: '≥ 4x',
      measured: x(against),
      met: against === undefined ? undefined : against >= 4,
    });
  }
  const cpu = ratio(ours100?.serverCpuUs, floor100?.serverCpuUs);
  list.push({
    what: 'Server CPU per turn at 100 sessions, against the floor',
    goal: '≤ 2x',
    measured: x(cpu),
    met: cpu === undefined ? undefined : cpu <= 2,
  });
  const levels = results.turns.map((each) => each.sessions).filter((sessions) => sessions >= 10);
  const cpuAt = (sessions: number) => minimalOf(samplesAt(results, sessions), OURS)?.serverCpuUs;
  const [fewest, most] = levels.length < 2 ? [undefined, undefined] : [Math.min(...levels), Math.max(...levels)];
  const growth = fewest === undefined || most === undefined ? undefined : ratio(cpuAt(most), cpuAt(fewest));
  list.push({
    what: fewest === undefined ? 'Server CPU per turn as sessions grow' : `Server CPU per turn, ${most} sessions against ${fewest}`,
    goal: 'not growing (≤ 1.2x)',
    measured: x(growth),
    met: growth === undefined ? undefined : growth <= 1.2,
  });
  const at1 = samplesAt(results, 1);
  const p50 = ratio(minimalOf(at1, OURS)?.p50Ms, minimalOf(at1, FLOOR)?.p50Ms);
  list.push({
    what: 'Sequential turn p50, against the floor',
    goal: '≤ 1.6x',
    measured: x(p50),
    met: p50 === undefined ? undefined : p50 <= 1.6,
  });
  const idle = results.idle.find((row) => row.server === OURS)?.kibPerStream;
  list.push({
    what: 'Resident memory per idle stream',
    goal: '≤ 16 KiB',
    measured: idle === undefined ? 'n/a' : `${idle.toFixed(1)} KiB`,
    met: idle === undefined ? undefined : idle <= 16,
  });
  // The bench writes whole turns, so the largest log holds a few events past 10^6.
  const restart = results.restart.find((row) => row.events >= 1_000_000 && row.snapshots)?.toServeMs.median;
  list.push({
    what: 'Restart on a 10^6-event log, with snapshots',
    goal: '< 2 s',
    measured: restart === undefined ? 'n/a' : `${(restart / 1000).toFixed(2)} s`,
    met: restart === undefined ? undefined : restart < 2_000,
  });
  return list;
}

/** Issue 26's targets for the turn, at 100 sessions and one, against the durable baseline (fastify + SQLite). */
export function durableTargets(results: BenchResults): Target[] {
  const at100 = samplesAt(results, 100);
  const at1 = samplesAt(results, 1);
  const cpu = ratio(minimalOf(at100, OURS)?.serverCpuUs, minimalOf(at100, DURABLE)?.serverCpuUs);
  const throughput = ratio(minimalOf(at100, OURS)?.turnsPerSecond.median, minimalOf(at100, DURABLE)?.turnsPerSecond.median);
  const p50 = ratio(minimalOf(at1, OURS)?.p50Ms, minimalOf(at1, DURABLE)?.p50Ms);
  const idle = results.idle.find((row) => row.server === OURS)?.kibPerStream;
  return [
    {
      what: 'Server CPU per turn at 100 sessions, against the durable baseline',
      goal: '≤ 1.6x',
      measured: x(cpu),
      met: cpu === undefined ? undefined : cpu <= 1.6,
    },
    {
      what: 'Throughput at 100 sessions, against the durable baseline',
      goal: '≥ 0.7x',
      measured: x(throughput),
      met: throughput === undefined ? undefined : throughput >= 0.7,
    },
    {
      what: 'Sequential turn p50, against the durable baseline',
      goal: '≤ 1.3x',
      measured: x(p50),
      met: p50 === undefined ? undefined : p50 <= 1.3,
    },
    {
      what: 'Resident memory per idle stream',
      goal: '≤ 10 KiB',
      measured: idle === undefined ? 'n/a' : `${idle.toFixed(1)} KiB`,
      met: idle === undefined ? undefined : idle <= 10,
    },
  ];
}

/** Every missed target, and every figure where another contender beat ours, said plainly. */
export function losses(results: BenchResults): string[] {
  const said = [...targets(results), ...durableTargets(results)]
    .filter((target) => target.met === false)
    .map((target) => `Target missed: ${target.what}: ${target.measured} (goal ${target.goal}).`);
  for (const { sessions, samples } of results.turns) {
    const ours = minimalOf(samples, OURS);
    if (ours === undefined) continue;
    for (const peer of PEERS) {
      const best = bestOf(samples, peer);
      if (best !== undefined && best.turnsPerSecond.median > ours.turnsPerSecond.median) {
        said.push(
          `At ${sessions} session${sessions > 1 ? 's' : ''}, ${best.contender.label} did ${formatValue(best.turnsPerSecond.median)} turns/s, ours ${formatValue(ours.turnsPerSecond.median)}.`,
        );
      }
      if (best !== undefined && best.serverCpuUs < ours.serverCpuUs) {
        said.push(
          `At ${sessions} session${sessions > 1 ? 's' : ''}, ${best.contender.server.title}'s server spent ${formatValue(best.serverCpuUs)} µs of CPU a turn, ours ${formatValue(ours.serverCpuUs)}.`,
        );
      }
    }
  }
  const idleOurs = results.idle.find((row) => row.server === OURS)?.kibPerStream;
  for (const row of results.idle) {
    if (PEERS.includes(row.server) && row.kibPerStream !== undefined && idleOurs !== undefined && row.kibPerStream < idleOurs) {
      said.push(
        `An idle stream costs ${row.server.toUpperCase()}'s server ${row.kibPerStream.toFixed(1)} KiB, ours ${idleOurs.toFixed(1)} KiB.`,
      );
    }
  }
  return said.length > 0 ? said : ['Nowhere in this run.'];
}

/** A session count's table: each contender's figures, against the floor and the durable baseline. */
export function turnsTable(samples: readonly TurnsSample[]): string[] {
  const floor = minimalOf(samples, FLOOR);
  const durable = minimalOf(samples, DURABLE);
  const lines = [
    '| contender | turns/s, median (min–max) | vs floor | vs durable | p50 ms | p99 ms | server CPU µs/turn | generator CPU |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const sample of samples) {
    if (sample.failed !== undefined) {
      lines.push(`| ${sample.contender.label} | **failed**: ${sample.failed.replace(/\|/g, '\\|').slice(0, 200)} | | | | | | |`);
      continue;
    }
    const busy = sample.generatorCpuPercent >= 90 ? ` **≥ 90%: the generator is the bound**` : '';
    lines.push(
      `| ${sample.contender.label} | ${range(sample.turnsPerSecond)} | ${x(ratio(sample.turnsPerSecond.median, floor?.turnsPerSecond.median))} | ${x(ratio(sample.turnsPerSecond.median, durable?.turnsPerSecond.median))} | ${ms(sample.p50Ms)} | ${ms(sample.p99Ms)} | ${formatValue(sample.serverCpuUs)} | ${Math.round(sample.generatorCpuPercent)}% of a core (${sample.generators} process${sample.generators > 1 ? 'es' : ''})${busy} |`,
    );
  }
  return lines;
}
