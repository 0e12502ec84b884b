/** Retention (core/retention.ts) for the assistant host: its sessions that ended long ago. */
import type { DomainEvent } from '../../machines/chat/events.js';
import type { EventLog } from '../../storage/event-log.js';
import type { Clock } from '../core/clock.js';
import { FORGOTTEN_PER_EVENT, forgetInBatches } from '../core/retention.js';
import type { ChatProjection } from './projection.js';

/**
 * The host's pass: sessions that ended before the time, with no callback delivery still queued. Each
 * batch's sessions lose their events before its event (host-wide events are the '' stream's, so the newest
 * of those is the one just appended; an id used again after it keeps its new events).
 */
export function forgetEndedSessions(
  projection: ChatProjection,
  log: EventLog<DomainEvent>,
  append: (events: readonly DomainEvent[]) => Promise<void>,
  clock: Clock,
) {
  return (endedBefore: number): Promise<number> =>
    forgetInBatches(
      async () => {
        const session_ids = projection.forgettable(endedBefore, FORGOTTEN_PER_EVENT);
        if (session_ids.length === 0) return undefined;
        await append([{ type: 'sessions.forgotten', session_ids, ended_before: endedBefore, at: clock.now() }]);
        return { streams: session_ids, count: session_ids.length };
      },
      ({ streams }) => log.removeStreams(streams, log.lastPositionOf('')),
    );
}
