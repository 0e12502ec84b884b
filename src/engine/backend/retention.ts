/** The backend's retention pass (engine/retention.ts): jobs settled and pairings ended long enough ago. */
import type { BackendEvent } from '../../machines/backend-events.js';
import { nothing, type Decision } from '../../machines/decider.js';
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
          const { job_ids, pairing_ids } = projection.forgettable(endedBefore, FORGOTTEN_PER_EVENT);
          if (job_ids.length + pairing_ids.length === 0) return nothing(undefined);
          const event: BackendEvent = { type: 'backend.forgotten', job_ids, pairing_ids, sent: projection.streamPositions(), ended_before: endedBefore, at: clock.now() };
          const streams = [...job_ids.map((id) => `job:${id}`), ...pairing_ids.map((id) => `pairing:${id}`)];
          return { events: [event], outcome: { streams, count: Math.max(job_ids.length, pairing_ids.length) } };
        }),
      (streams) => log.removeStreams(streams),
    );
}
