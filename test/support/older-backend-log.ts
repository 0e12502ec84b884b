/**
 * A backend log as one written while a `job_id` was the whole service's (before issue 23): each job's
 * events in the stream `job:{job_id}`, and, if asked, a snapshot of format 1 (jobs and their versions
 * keyed by `job_id` alone) at its end. What an upgraded backend, retention and replay must still read.
 */
import { BackendProjection } from '../../engine/reasoning/projection.js';
import { encodeInParts } from '../../engine/core/state-codec.js';
import { backendStreamOf, isJobEvent, olderJobStream, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { jobRefOf } from '../../machines/reasoning/job-events.js';
import { EventLog } from '../../storage/event-log.js';

/** The maps of a state keyed by `jobKey`, keyed by `job_id` alone, as format 1 kept them. */
const byJobId = (map: ReadonlyMap<string, unknown>) => new Map([...map].map(([key, value]) => [jobRefOf(key).job_id, value]));

/** The text of a format 1 snapshot of the fold of `events`. */
export function format1Snapshot(events: readonly BackendEvent[]): string {
  const projection = new BackendProjection();
  for (const event of events) projection.apply(event);
  const state = projection.state();
  return [
    ...encodeInParts({ format: 1, kind: 'backend' }, { ...state, jobs: byJobId(state.jobs), versions: byJobId(state.versions) }),
  ].join('');
}

export async function writeOlderBackendLog(
  path: string,
  events: readonly BackendEvent[],
  options: { readonly snapshot?: boolean } = {},
): Promise<void> {
  const log = EventLog.open<BackendEvent>({
    path,
    streamOf: (event) => (isJobEvent(event) ? olderJobStream(event.job_id) : backendStreamOf(event)),
  });
  for (const event of events) void log.append(event);
  await log.settled();
  if (options.snapshot === true) log.writeSnapshot(log.lastPosition, format1Snapshot(events), events.at(-1)!.at);
  await log.close();
}
