/** The backend's retention pass (engine/retention.ts): jobs settled and pairings ended long enough ago. */
import type { BackendEvent } from '../../machines/backend-events.js';
import type { EventLog } from '../../storage/event-log.js';
import type { Clock } from '../clock.js';
import { FORGOTTEN_PER_EVENT, forgetInBatches } from '../retention.js';
import type { BackendProjection } from './projection.js';

export function forgetEndedRecords(projection: BackendProjection, log: EventLog<BackendEvent>, append: (events: readonly BackendEvent[]) => Promise<void>, clock: Clock) {
  return (endedBefore: number): Promise<number> =>
    forgetInBatches(log, append, () => {
      const { job_ids, pairing_ids } = projection.forgettable(endedBefore, FORGOTTEN_PER_EVENT);
      if (job_ids.length + pairing_ids.length === 0) return undefined;
      const event: BackendEvent = { type: 'backend.forgotten', job_ids, pairing_ids, sent: projection.streamPositions(), ended_before: endedBefore, at: clock.now() };
      const streams = [...job_ids.map((id) => `job:${id}`), ...pairing_ids.map((id) => `pairing:${id}`)];
      return { event, streams, count: Math.max(job_ids.length, pairing_ids.length) };
    });
}
