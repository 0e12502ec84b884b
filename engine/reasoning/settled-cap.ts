/**
 * The cap on settled jobs kept per integration (`--max-settled-jobs`, PROTOCOL.md 6e.23): which of them
 * retention forgets before the retention is up. With the rate of creates it bounds the jobs the log holds
 * by the integrations, whatever a client's request rate.
 */
import type { JobSnapshot } from '../../machines/reasoning/job.js';

/** How many settled jobs each integration holds beyond `max`; in the fold's order (the jobs' creation order) the oldest are those. */
export function settledOverCap(jobs: Iterable<JobSnapshot>, max: number): Map<string, number> {
  const over = new Map<string, number>();
  if (max === Infinity) return over;
  for (const job of jobs) {
    const { integration_id, settled_at } = job.context;
    if (settled_at !== undefined) over.set(integration_id, (over.get(integration_id) ?? 0) + 1);
  }
  for (const [id, settled] of over) {
    if (settled > max) over.set(id, settled - max);
    else over.delete(id);
  }
  return over;
}

/** Takes one from the integration's count, if it has one left: true when it had. */
export function spend(counts: Map<string, number>, id: string): boolean {
  const left = counts.get(id) ?? 0;
  if (left > 0) counts.set(id, left - 1);
  return left > 0;
}
