/**
 * What the backend's retention may forget next, read from the fold's state: jobs settled long enough ago,
 * or beyond the cap on settled jobs each integration keeps (`--max-settled-jobs`, PROTOCOL.md 6e.23: with
 * the rate of creates it bounds the jobs the log holds, whatever a client's request rate); integrations
 * revoked, with all they had; pairings ended; tickets used or expired; and integrations whose older
 * events a compaction would stand for.
 */
import { jobKey, type JobRef } from '../../machines/reasoning/job-events.js';
import type { JobSnapshot } from '../../machines/reasoning/job.js';
import type { BackendState } from './backend-state.js';

/** What one retention pass may forget next (`forgettable`). */
export interface Forgettable {
  readonly jobs: readonly JobRef[];
  readonly pairing_ids: readonly string[];
  readonly integration_ids: readonly string[];
  /** Pairing tickets used or expired: their events go. */
  readonly ticket_digests: readonly string[];
}

/** Integrations (at most `max`) with events logged before `endedBefore` that a compaction would stand for. */
export function compactable(state: BackendState, endedBefore: number, max: number): string[] {
  const ids: string[] = [];
  for (const [id, from] of state.compactFrom) {
    if (ids.length === max) break;
    if (from < endedBefore) ids.push(id);
  }
  return ids;
}

/**
 * What retention may forget, at most `max` of each: integrations revoked before `endedBefore` with no
 * open job, with every job they had (an integration goes in the batch that takes its last job); other
 * jobs settled before it, or settled and older than an integration's newest `maxSettledJobs` settled
 * ones (but not the probe an integration's capability profile comes from); pairings past their expiry
 * and ended before `pairingsEndedBefore` (a completed one answers a confirmation asked again until its
 * expiry); pairing tickets used, or expired by `now`.
 */
export function forgettable(
  state: BackendState,
  endedBefore: number,
  pairingsEndedBefore: number,
  max: number,
  { now = -Infinity, maxSettledJobs = Infinity } = {},
): Forgettable {
  const revoked = new Set<string>();
  for (const [id, integration] of state.integrations) {
    const revokedAt = integration.context.revoked_at;
    if (revokedAt !== undefined && revokedAt < endedBefore && !state.open.has(id)) revoked.add(id);
  }
  const profiled = new Set([...state.profiles].map(([integrationId, profile]) => jobKey(integrationId, profile.job_id)));
  const overCap = settledOverCap(state.jobs.values(), maxSettledJobs);
  const jobs: JobRef[] = [];
  /** Revoked integrations with a job left for a later batch. */
  const unfinished = new Set<string>();
  for (const [key, job] of state.jobs) {
    const { integration_id, job_id, settled_at } = job.context;
    const withIntegration = revoked.has(integration_id);
    // Each settled job takes one from its integration's excess, oldest first, whether it is old enough or not.
    if (
      !withIntegration &&
      (settled_at === undefined || profiled.has(key) || (!spend(overCap, integration_id) && settled_at >= endedBefore))
    )
      continue;
    if (jobs.length < max) jobs.push({ integration_id, job_id });
    else if (withIntegration) unfinished.add(integration_id);
    else if (revoked.size === unfinished.size) break;
  }
  const integration_ids = [...revoked].filter((id) => !unfinished.has(id)).slice(0, max);
  const pairing_ids: string[] = [];
  for (const [id, pairing] of state.pairings) {
    if (pairing_ids.length === max) break;
    const { ended_at, expires_at } = pairing.context;
    if (ended_at !== undefined && Math.max(ended_at, expires_at) < pairingsEndedBefore) pairing_ids.push(id);
  }
  const ticket_digests: string[] = [];
  for (const [digest, { expires_at, used }] of state.tickets) {
    if (ticket_digests.length === max) break;
    if (used || expires_at <= now) ticket_digests.push(digest);
  }
  return { jobs, pairing_ids, integration_ids, ticket_digests };
}

/** How many settled jobs each integration holds beyond `max`; in the fold's order (the jobs' creation order) the oldest are those. */
function settledOverCap(jobs: Iterable<JobSnapshot>, max: number): Map<string, number> {
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
function spend(counts: Map<string, number>, id: string): boolean {
  const left = counts.get(id) ?? 0;
  if (left > 0) counts.set(id, left - 1);
  return left > 0;
}
