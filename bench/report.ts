/**
 * BENCHMARKS.md and the charts of bench/results/, from one run's figures. Every claim on speed is a
 * ratio of figures from the same run, so the targets (issue 14) are checked here, and a miss is said
 * plainly beside the table it comes from.
 */
import { barChart, type BarGroup } from './chart.js';
import { range, targetRow } from './report-common.js';
import { hostileChart, hostileSection } from './report-hostile.js';
import { jobsChart, jobsSection } from './report-jobs.js';
import { memorySection } from './report-memory.js';
import { scaleoutChart, scaleoutSection } from './report-scaleout.js';
import { durableTargets, losses, targets, turnsTable } from './report-turns.js';
import type { BenchResults } from './results.js';
import type { TurnsSample } from './scenarios/turns.js';

export { targetRow, type Target } from './report-common.js';
export { durableTargets, targets } from './report-turns.js';
export { jobTargets } from './report-jobs.js';

const serverNames = (results: BenchResults) =>
  new Map(
    results.turns.flatMap((each) => each.samples.map((sample) => [sample.contender.server.name, sample.contender.server.title] as const)),
  );

/** BENCHMARKS.md: this run's figures, then `diary` (bench/diary.md: where the time goes and what was tried, kept by hand). */
export function markdown(results: BenchResults, diary = ''): string {
  const { machine } = results;
  const out: string[] = [];
  out.push('# Benchmarks', '');
  out.push(
    `Written by \`npm run bench\`${machine.quick ? ' **--quick** (short slices: a smoke test, not figures to quote)' : ''} on ${machine.date}. Every figure below comes from this one run, on this machine, with every contender run in turn, interleaved over several rounds; a ratio compares figures taken minutes apart at most.`,
    '',
  );
  out.push('| machine | |', '|---|---|');
  out.push(
    `| CPU | ${machine.cpu}, ${machine.cores} cores |`,
    `| memory | ${machine.memoryGiB.toFixed(1)} GiB |`,
    `| OS | ${machine.os} |`,
    `| Node | ${machine.node} |`,
  );
  out.push(`| contenders | ${machine.versions.join('; ')} |`, '');

  out.push('## Targets (issue 14)', '', '| target | goal | measured | |', '|---|---|---|---|');
  out.push(...targets(results).map(targetRow), '');
  out.push(
    '## Targets (issue 26)',
    '',
    "Against the durable baseline: fastify 5 with better-sqlite3, the same echo turn on the same wire as the floor, every message and every reply committed to a SQLite table (WAL, `synchronous=NORMAL`, one transaction per event-loop turn) before it is acknowledged or sent (bench/baselines/durable-turns.ts). The job targets are under the reasoning channel's table.",
    '',
    '| target | goal | measured | |',
    '|---|---|---|---|',
    ...durableTargets(results).map(targetRow),
  );
  out.push('', '### Where assistant-relay loses', '', ...losses(results).map((loss) => `- ${loss}`), '');
  if (results.failures.length > 0) out.push('Scenarios that failed:', '', ...results.failures.map((failure) => `- ${failure}`), '');

  out.push('## Turns', '');
  out.push(
    'A turn: the client sends the user\'s text; the server sends one progress event, then one final reply with the text; the turn ends when the client has read that reply (and checked it). Sessions run closed loops (the next turn leaves when the last reply is read). "Minimal" clients speak each wire by hand over kept-alive sockets, so that the server, not the client, is the bound; the peers are also driven by their own SDK clients, as their documentation shows. Server CPU is the server process\'s own user and system time per turn: the figure noise disturbs least.',
    '',
    '![turns per second](bench/results/turns.svg)',
    '',
  );
  for (const { sessions, samples } of results.turns) {
    out.push(`### ${sessions} session${sessions > 1 ? 's' : ''}${sessions === 1 ? ' (turn latency: sequential turns)' : ''}`, '');
    out.push(...turnsTable(samples), '');
  }
  out.push('![server CPU per turn](bench/results/cpu.svg)', '');

  const titles = serverNames(results);
  out.push(
    '## Resume',
    '',
    'A client away while turns were answered, then back with the newest id it read: the time from opening the stream again to having read all it will get, and the bytes sent.',
    '',
  );
  out.push(
    '| server | away for | catch-up ms, median (min–max) | bytes | replies replayed | named missed | lost without a word | note |',
    '|---|---|---|---|---|---|---|---|',
  );
  for (const row of results.resume) {
    const lost = row.lost === undefined ? 'n/a' : row.lost > 0 ? `**${row.lost}**` : '0';
    out.push(
      `| ${titles.get(row.server) ?? row.server} | ${row.away} turns | ${row.catchUpMs === undefined ? 'n/a' : range(row.catchUpMs, 1)} | ${row.bytes?.toLocaleString('en-US') ?? 'n/a'} | ${row.replayed ?? 'n/a'} | ${row.missed ?? 'n/a'} | ${lost} | ${row.note ?? ''} |`,
    );
  }
  out.push('', '![resume](bench/results/resume.svg)', '');

  out.push(
    '## Idle streams',
    '',
    'Resident memory a server grows by per open, idle stream (RSS after opening them, less RSS before, over the count).',
    '',
  );
  out.push('| server | streams | KiB per stream | note |', '|---|---|---|---|');
  for (const row of results.idle)
    out.push(
      `| ${titles.get(row.server) ?? row.server} | ${row.streams.toLocaleString('en-US')} | ${row.kibPerStream === undefined ? 'n/a' : row.kibPerStream.toFixed(1)} | ${row.note ?? ''} |`,
    );
  out.push('', '![idle streams](bench/results/idle.svg)', '');

  out.push(
    '## Restart',
    '',
    "A host's start on a log of this many events (1,000 sessions' turns, as the host writes them): from `createAssistantHost` to its resolution, the log folded from its newest snapshot or whole, and the events a second `replay` folds on it.",
    '',
  );
  out.push('| events | snapshots | start, ms, median (min–max) | replay fold, events/s |', '|---|---|---|---|');
  for (const row of results.restart)
    out.push(
      `| ${row.events.toLocaleString('en-US')} | ${row.snapshots ? 'yes' : 'no, folding the whole log'} | ${range(row.toServeMs)} | ${range(row.replayPerSecond)} |`,
    );
  out.push('', '![restart](bench/results/restart.svg)', '');

  out.push(
    '## The log',
    '',
    'Events appended to the SQLite event log a second, one a commit and many a commit (a durable file, `synchronous=NORMAL`, WAL).',
    '',
  );
  out.push('| mode | events/s, median (min–max) |', '|---|---|');
  for (const row of results.log) out.push(`| ${row.mode} | ${range(row.eventsPerSecond)} |`);
  out.push('', '![log appends](bench/results/log.svg)', '');

  out.push(...jobsSection(results.jobs));
  if (results.hostile !== undefined) out.push(...hostileSection(results.hostile));
  if (results.scaleout !== undefined) out.push(...scaleoutSection(results.scaleout));
  if (results.memory !== undefined) out.push(...memorySection(results.memory));
  if (diary !== '') out.push(diary.trimEnd(), '');
  return out.join('\n');
}

export function charts(results: BenchResults): Record<string, string> {
  const titles = serverNames(results);
  const turnsGroups = (pick: (sample: TurnsSample) => number): BarGroup[] =>
    results.turns.map(({ sessions, samples }) => ({
      label: `${sessions} session${sessions > 1 ? 's' : ''}`,
      bars: samples.map((sample) =>
        sample.failed === undefined
          ? { label: sample.contender.label, value: pick(sample) }
          : { label: sample.contender.label, value: undefined, note: 'failed' },
      ),
    }));
  return {
    ...scaleoutChart(results.scaleout),
    'turns.svg': barChart({
      title: 'Echo turns per second (median of rounds)',
      unit: 'turns/s',
      groups: turnsGroups((sample) => sample.turnsPerSecond.median),
    }),
    'cpu.svg': barChart({
      title: "Server CPU per turn (the server process's own time)",
      unit: 'µs',
      groups: turnsGroups((sample) => sample.serverCpuUs),
    }),
    'resume.svg': barChart({
      title: 'Catching up after being away',
      unit: 'ms',
      groups: [...new Set(results.resume.map((row) => row.away))].map((away) => ({
        label: `away for ${away} turns`,
        bars: results.resume
          .filter((row) => row.away === away)
          .map((row) => ({
            label: titles.get(row.server) ?? row.server,
            value: row.catchUpMs?.median,
            ...(row.catchUpMs === undefined ? { note: row.note ?? 'no figure' } : {}),
          })),
      })),
    }),
    'idle.svg': barChart({
      title: 'Resident memory per idle stream',
      unit: 'KiB',
      groups: [
        {
          label: 'per open stream',
          bars: results.idle.map((row) => ({
            label: `${titles.get(row.server) ?? row.server} (${row.streams.toLocaleString('en-US')})`,
            value: row.kibPerStream,
            ...(row.kibPerStream === undefined ? { note: row.note ?? 'no figure' } : {}),
          })),
        },
      ],
    }),
    'restart.svg': barChart({
      title: 'Restart: time to serve',
      unit: 'ms',
      log: true,
      groups: [...new Set(results.restart.map((row) => row.events))].map((events) => ({
        label: `${events.toLocaleString('en-US')} events`,
        bars: results.restart
          .filter((row) => row.events === events)
          .map((row) => ({ label: row.snapshots ? 'with snapshots' : 'folding the whole log', value: row.toServeMs.median })),
      })),
    }),
    'log.svg': barChart({
      title: 'Event log appends',
      unit: 'events/s',
      groups: [{ label: 'SQLite, WAL', bars: results.log.map((row) => ({ label: row.mode, value: row.eventsPerSecond.median })) }],
    }),
    ...jobsChart(results.jobs),
    ...(results.hostile === undefined ? {} : hostileChart(results.hostile)),
  };
}
