/** A job as the client reads it (`JobView`): its state, times as ISO 8601, and its result or error once it has one. */
import type { JobView } from '../../protocol/index.js';
import { jobState, type JobSnapshot } from '../../machines/job.js';

const iso = (ms: number) => new Date(ms).toISOString();

export function jobView(job: JobSnapshot): JobView {
  const c = job.context;
  return {
    job_id: c.job_id,
    integration_id: c.integration_id,
    purpose: c.purpose,
    state: jobState(job),
    byo: c.byo,
    created_at: iso(c.created_at),
    deadline_at: iso(c.deadline_at),
    deliveries: c.deliveries,
    ...(c.settled_at === undefined ? {} : { settled_at: iso(c.settled_at) }),
    ...(c.result === undefined ? {} : { result: c.result }),
    ...(c.error === undefined ? {} : { error: c.error }),
  };
}
