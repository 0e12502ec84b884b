/**
 * The memory section of BENCHMARKS.md (issue 25): a node's resident memory with many integrations in the
 * store and a thousand active, against its memory with only those thousand stored, in the same run.
 */
import { targetRow, type Target } from './report.js';
import type { MemoryResults } from './results.js';

const count = (value: number) => value.toLocaleString('en-US');

/** Issue 25's target: the largest store against the first (the store holding only the active integrations). */
export function memoryTargets(results: MemoryResults | undefined): Target[] {
  const base = results?.rows[0];
  const most = results?.rows.at(-1);
  const ratio = base !== undefined && most !== undefined && most !== base ? most.rssMiB / base.rssMiB : undefined;
  const measured = ratio === undefined || !Number.isFinite(ratio) ? 'n/a' : `${ratio.toFixed(2)}x`;
  return [
    {
      what: `A node's memory with ${most === undefined ? 'many' : count(most.stored)} integrations in the store and ${most === undefined ? 'some' : count(most.active)} active, against ${base === undefined ? 'only those' : count(base.stored)} in the store`,
      goal: '≤ 1.2x',
      measured,
      met: ratio === undefined || !Number.isFinite(ratio) ? undefined : ratio <= 1.2,
    },
  ];
}

export function memorySection(results: MemoryResults): string[] {
  const out = [
    "## A node's memory against the store (issue 25)",
    '',
    "One backend node (PostgreSQL with NATS, a fresh schema each) on a store seeded with that many integrations (`bench/scenarios/memory-store.ts`: one through the store's append, the rest by one INSERT … SELECT of the same rows, read back), of which the first are made active as their plugin and client would: a heartbeat, the plugin's stream held open, one job created, taken on the stream, run and completed. Then, the streams still open and the node settled, its resident memory (/proc, the median of three readings), its heap in use and the integrations it holds and counts online (its /metrics). The node runs with its defaults (`--max-held-integrations` 10,000, idle partitions let go after 60 s).",
    '',
    '| stored | active | seeding s | making active s | RSS at start MiB | RSS active MiB | heap used MiB | held | online |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const row of results.rows)
    out.push(
      `| ${count(row.stored)} | ${count(row.active)} | ${(row.seedMs / 1000).toFixed(1)} | ${(row.activateMs / 1000).toFixed(1)} | ${row.startRssMiB.toFixed(0)} | ${row.rssMiB.toFixed(0)} | ${row.heapUsedMiB.toFixed(0)} | ${count(row.held)} | ${count(row.online)} |`,
    );
  out.push('', '| target | goal | measured | |', '|---|---|---|---|');
  out.push(...memoryTargets(results).map(targetRow));
  out.push('');
  return out;
}
