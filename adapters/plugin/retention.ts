/**
 * The plugin's retention (engine/retention.ts): a job closed longer ago than the retention is forgotten
 * and its events (its envelope, its outcome) removed from the plugin's log. Only what deduplication needs
 * stays: a forgotten job whose deadline has not passed keeps its id until then, so that the backend
 * sending it again (at least once, PROTOCOL.md 6d.3) does not get it run twice; past its deadline the
 * backend has settled it, and nothing of it is kept.
 */
import type { Appender } from '../../engine/core/append.js';
import type { Clock } from '../../engine/core/clock.js';
import { FORGOTTEN_PER_EVENT, forgetInBatches, pruneForgettings } from '../../engine/core/retention.js';
import type { EventLog, StoredEvent } from '../../storage/event-log.js';
import { forgettableJobs, type PluginState } from '../../engine/reasoning/plugin-log.js';
import { PLUGIN_FORGOTTEN_STREAM, type PluginEvent, type PluginJobsForgotten } from '../../machines/reasoning/plugin-job-events.js';

/** The plugin's pass: forgets batch after batch, then removes the forgetting events the newest stands for (one process: all of them). */
export function forgetClosedJobs(state: PluginState, log: EventLog<PluginEvent>, appender: Appender<PluginEvent>, clock: Clock) {
  return async (closedBefore: number): Promise<number> => {
    const forgotten = await forgetInBatches(
      async () => {
        const at = clock.now();
        const { event, count } = forgettableJobs(state, closedBefore, at, FORGOTTEN_PER_EVENT);
        if (count === 0) return undefined;
        await appender.append([{ type: 'plugin.jobs_forgotten', ...event, at }]);
        return { streams: event.job_ids, count };
      },
      ({ streams }) => log.removeStreams(streams, log.lastPositionOf(PLUGIN_FORGOTTEN_STREAM)),
    );
    await pruneForgettings(
      [...log.readStream(PLUGIN_FORGOTTEN_STREAM)] as StoredEvent<PluginJobsForgotten>[],
      Infinity,
      ({ event, position }) => log.removeStreams(event.job_ids, position),
      (position) => log.removeStreams([PLUGIN_FORGOTTEN_STREAM], position),
    );
    return forgotten;
  };
}
