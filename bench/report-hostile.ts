/** The hostile tenants' section of BENCHMARKS.md (issue 23) and its chart. */
import { barChart } from './chart.js';
import { cell, ms, ratio, x } from './report-common.js';
import type { HostileRow } from './results.js';

/** The quiet tenant's p99 in a phase against the phase with no attack. */
const againstQuiet = (rows: readonly HostileRow[], row: HostileRow) =>
  ratio(row.quiet.p99Ms, rows.find((each) => each.attack === 'none')?.quiet.p99Ms);

export function hostileSection(rows: readonly HostileRow[]): string[] {
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
export function hostileChart(rows: readonly HostileRow[]): Record<string, string> {
  return {
    'hostile.svg': barChart({
      title: "The quiet tenant's job p99 while a hostile tenant attacks",
      unit: 'ms',
      log: true,
      groups: [
        {
          label: 'quiet tenant, p99',
          bars: rows.map((row) =>
            Number.isFinite(row.quiet.p99Ms)
              ? { label: row.attack, value: row.quiet.p99Ms }
              : { label: row.attack, value: undefined, note: 'no job completed' },
          ),
        },
      ],
    }),
  };
}
