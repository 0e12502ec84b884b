/**
 * BENCHMARKS.md and the charts of bench/results/, from one run's figures. Every claim on speed is a
 * ratio of figures from the same run, so the targets (issue 14) are checked here, and a miss is said
 * plainly beside the table it comes from.
 */
import { barChart, formatValue, type BarGroup } from './chart.js';
import { memorySection } from './report-memory.js';
import { scaleoutChart, scaleoutSection, startingPointTargets } from './report-scaleout.js';
import type { BenchResults, HostileRow, Spread } from './results.js';
import type { TurnsSample } from './scenarios/turns.js';

export interface Target {
  readonly what: string;
  readonly goal: string;
  readonly measured: string;
  /** `undefined`: not measured in this run (a quick run, a failed scenario). */
  readonly met: boolean | undefined;
}

/** A target as a row of a report's table of targets. */
export function targetRow(target: Target): string {
  return `| ${target.what} | ${target.goal} | ${target.measured} | ${target.met === undefined ? 'not measured' : target.met ? 'met' : '**missed**'} |`;
}

const OURS = 'relay';
const FLOOR = 'floor';
const PEERS = ['mcp', 'a2a'];

const samplesAt = (results: BenchResults, sessions: number) => results.turns.find((each) => each.sessions === sessions)?.samples ?? [];
const ok = (sample: TurnsSample | undefined) => (sample !== undefined && sample.failed === undefined ? sample : undefined);
const minimalOf = (samples: readonly TurnsSample[], server: string) =>
  ok(samples.find((each) => each.contender.server.name === server && each.contender.client === 'minimal'));
/** A peer's server at its best: whichever of its clients drove it faster. */
const bestOf = (samples: readonly TurnsSample[], server: string) =>
  samples
    .filter((each) => each.contender.server.name === server && each.failed === undefined)
    .sort((a, b) => b.turnsPerSecond.median - a.turnsPerSecond.median)[0];
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0 ? undefined : a / b;
const x = (value: number | undefined) => (value === undefined ? 'n/a' : `${value.toFixed(2)}x`);

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

/** Every missed target, and every figure where another contender beat ours, said plainly. */
export function losses(results: BenchResults): string[] {
  const said = targets(results)
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

const range = (value: Spread, digits = 0) => `${formatValue(value.median)} (${value.min.toFixed(digits)}–${value.max.toFixed(digits)})`;
const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(2) : 'n/a');
const serverNames = (results: BenchResults) =>
  new Map(
    results.turns.flatMap((each) => each.samples.map((sample) => [sample.contender.server.name, sample.contender.server.title] as const)),
  );

function turnsTable(samples: readonly TurnsSample[], floor: TurnsSample | undefined): string[] {
  const lines = [
    '| contender | turns/s, median (min–max) | vs floor | p50 ms | p99 ms | server CPU µs/turn | generator CPU |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const sample of samples) {
    if (sample.failed !== undefined) {
      lines.push(`| ${sample.contender.label} | **failed**: ${sample.failed.replace(/\|/g, '\\|').slice(0, 200)} | | | | | |`);
      continue;
    }
    const busy = sample.generatorCpuPercent >= 90 ? ` **≥ 90%: the generator is the bound**` : '';
    lines.push(
      `| ${sample.contender.label} | ${range(sample.turnsPerSecond)} | ${x(ratio(sample.turnsPerSecond.median, floor?.turnsPerSecond.median))} | ${ms(sample.p50Ms)} | ${ms(sample.p99Ms)} | ${formatValue(sample.serverCpuUs)} | ${Math.round(sample.generatorCpuPercent)}% of a core (${sample.generators} process${sample.generators > 1 ? 'es' : ''})${busy} |`,
    );
  }
  return lines;
}

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
  out.push(...targets(results).map(targetRow));
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
    out.push(...turnsTable(samples, minimalOf(samples, FLOOR)), '');
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

  out.push(
    '## The reasoning channel',
    '',
    'Jobs a second from a client through the backend relay, to the plugin and its reasoner, and the result back to the client: on the embedded SQLite log, and on PostgreSQL with NATS JetStream through one node and through three (the client sends each request to the next node; the plugin streams from the first). On one machine the three nodes share its cores with PostgreSQL, NATS, the plugin and the client: the figure shows what crossing nodes costs, not what more machines add.',
    '',
  );
  out.push('| backend | concurrent jobs | jobs/s, median (min–max) | p50 ms | p99 ms |', '|---|---|---|---|---|');
  for (const row of results.jobs)
    out.push(`| ${row.setup ?? 'embedded'} | ${row.concurrency} | ${range(row.jobsPerSecond)} | ${ms(row.p50Ms)} | ${ms(row.p99Ms)} |`);
  const againstStart = startingPointTargets(results.jobs);
  if (againstStart.length > 0) out.push('', '| target | goal | measured | |', '|---|---|---|---|', ...againstStart.map(targetRow));
  out.push('', '![jobs](bench/results/jobs.svg)', '');
  if (results.hostile !== undefined) out.push(...hostileSection(results.hostile));
  if (results.scaleout !== undefined) out.push(...scaleoutSection(results.scaleout));
  if (results.memory !== undefined) out.push(...memorySection(results.memory));
  if (diary !== '') out.push(diary.trimEnd(), '');
  return out.join('\n');
}

/** The quiet tenant's p99 in a phase against the phase with no attack. */
const againstQuiet = (rows: readonly HostileRow[], row: HostileRow) =>
  ratio(row.quiet.p99Ms, rows.find((each) => each.attack === 'none')?.quiet.p99Ms);
const cell = (text: string) => text.replace(/\|/g, '\\|');

function hostileSection(rows: readonly HostileRow[]): string[] {
  const out = [
    '## Hostile tenants',
    '',
    `One backend (one process, the embedded SQLite log) serves a quiet tenant and a hostile one. The quiet tenant is an integration with the real plugin (\`builtin\` reasoner) and a client creating jobs in closed loops at a modest, steady rate (\`bench/scenarios/hostile.ts\`); the hostile tenant runs each attack in turn for ${rows[0] === undefined ? 'a while' : `about ${Math.round(rows[0].seconds)} s`}, with a fresh integration of its own each time and its pairing traffic from other loopback addresses. The headline is the quiet tenant's p99 under each attack against no attack. "Attacker got" counts the attack's requests by the status they were answered; "bystander" is someone else pairing from another address right after the attack. The backend's memory and log are read after each phase: they add up, the phases running one after the other on one backend.`,
    '',
    ...rows.map((row) => `- \`${row.attack}\`: ${row.what}`),
    '',
    '| attack | quiet jobs | p50 ms | p99 ms | p99 vs no attack | quiet errors | attacker got | bystander pairing | backend RSS MiB | log MiB | log events (added) |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const row of rows) {
    const got = Object.entries(row.attacker)
      .sort(([, a], [, b]) => b - a)
      .map(([answer, count]) => `${answer} ×${count.toLocaleString('en-US')}`)
      .join(', ');
    const errors =
      row.quiet.errors === 0
        ? '0'
        : `**${row.quiet.errors}**${row.quiet.firstError === undefined ? '' : `: ${cell(row.quiet.firstError.slice(0, 100))}`}`;
    out.push(
      `| \`${row.attack}\` | ${row.quiet.completed} | ${ms(row.quiet.p50Ms)} | ${ms(row.quiet.p99Ms)} | ${row.attack === 'none' ? '(the baseline)' : x(againstQuiet(rows, row))} | ${errors} | ${cell(got) || 'nothing'} | ${row.bystander} | ${row.rssMiB.toFixed(0)} | ${row.logMiB.toFixed(1)} | ${row.events.toLocaleString('en-US')} (+${row.eventsAdded.toLocaleString('en-US')}) |`,
    );
  }
  const worst = rows.filter((row) => row.attack !== 'none').sort((a, b) => (againstQuiet(rows, b) ?? 0) - (againstQuiet(rows, a) ?? 0))[0];
  if (worst !== undefined)
    out.push('', `The quiet tenant's p99 suffered most under \`${worst.attack}\`: ${x(againstQuiet(rows, worst))} its p99 with no attack.`);
  out.push('', '![hostile tenants](bench/results/hostile.svg)', '');
  return out;
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
    'jobs.svg': barChart({
      title: 'Reasoning jobs per second (backend → plugin → result)',
      unit: 'jobs/s',
      groups: [...new Set(results.jobs.map((row) => row.concurrency))].map((concurrency) => ({
        label: `${concurrency} concurrent`,
        bars: results.jobs
          .filter((row) => row.concurrency === concurrency)
          .map((row) => ({ label: row.setup ?? 'embedded', value: row.jobsPerSecond.median })),
      })),
    }),
    ...(results.hostile === undefined
      ? {}
      : {
          'hostile.svg': barChart({
            title: "The quiet tenant's job p99 while a hostile tenant attacks",
            unit: 'ms',
            log: true,
            groups: [
              {
                label: 'quiet tenant, p99',
                bars: results.hostile.map((row) =>
                  Number.isFinite(row.quiet.p99Ms)
                    ? { label: row.attack, value: row.quiet.p99Ms }
                    : { label: row.attack, value: undefined, note: 'no job completed' },
                ),
              },
            ],
          }),
        }),
  };
}
