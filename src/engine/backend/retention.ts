/** The backend's retention pass (engine/retention.ts): jobs settled and pairings ended long enough ago. */
import { jobStream, olderJobStream, type BackendEvent } from '../../machines/backend-events.js';
import { nothing, type Decision } from '../../machines/decider.js';
import { jobKey, jobRefOf, type JobRef } from '../../machines/job-events.js';
import type { Clock } from '../clock.js';
import { FORGOTTEN_PER_EVENT, forgetInBatches, type ForgottenBatch } from '../retention.js';
import type { BackendLog } from './backend-log.js';
import type { BackendProjection } from './projection.js';

/**
 * Each batch is a decision (on a shared log, every node's pass decides in turn, and a later one finds
 * nothing left to forget); once it is committed, the batch's events are removed from the log.
 */
export function forgetEndedRecords(projection: BackendProjection, log: BackendLog<unknown>, clock: Clock) {
  return (endedBefore: number): Promise<number> =>
    forgetInBatches(
      () =>
        log.decide((): Decision<BackendEvent, ForgottenBatch | undefined> => {
          const { jobs, pairing_ids } = projection.forgettable(endedBefore, FORGOTTEN_PER_EVENT);
          if (jobs.length + pairing_ids.length === 0) return nothing(undefined);
          const job_ids = jobs.map(({ job_id }) => job_id);
          const event: BackendEvent = { type: 'backend.forgotten', jobs: byIntegration(jobs), job_ids, pairing_ids, sent: projection.streamPositions(), ended_before: endedBefore, at: clock.now() };
          const streams = [...jobs.map((job) => jobStream(job.integration_id, job.job_id)), ...olderStreams(projection, jobs), ...pairing_ids.map((id) => `pairing:${id}`)];
          return { events: [event], outcome: { streams, count: Math.max(jobs.length, pairing_ids.length) } };
        }),
      (streams) => log.removeStreams(streams),
    );
}

/** Each integration's jobs, by `job_id`: how `backend.forgotten` names them. */
function byIntegration(jobs: readonly JobRef[]): Record<string, string[]> {
  const named: Record<string, string[]> = {};
  for (const { integration_id, job_id } of jobs) (named[integration_id] ??= []).push(job_id);
  return named;
}

/**
 * A log written while a `job_id` was the whole service's keeps a job's earlier events under
 * `job:{job_id}`, whichever integration's job it was: removed once no job of that id is left, so never
 * while the job whose events they may be lives on.
 */
function olderStreams(projection: BackendProjection, forgotten: readonly JobRef[]): string[] {
  const leaving = new Set(forgotten.map(({ integration_id, job_id }) => jobKey(integration_id, job_id)));
  const ids = new Set(forgotten.map(({ job_id }) => job_id));
  for (const key of projection.state().jobs.keys()) if (!leaving.has(key)) ids.delete(jobRefOf(key).job_id);
  return [...ids].map(olderJobStream);
}
