/**
 * A job's two timers, kept from its committed events on the node that owns its integration: its
 * deadline, when it expires, and the lease of its delivery or run, when it is released to be sent again.
 * Re-armed from the fold on a start, or when a node takes the integration over, so that neither a restart
 * nor, on a shared log, a node's death loses one.
 */
import { jobKey, jobRefOf, type JobEvent, type JobRef } from '../../machines/reasoning/job-events.js';
import type { JobSnapshot } from '../../machines/reasoning/job.js';
import type { Clock } from '../core/clock.js';
import { Deadlines } from '../core/deadlines.js';

export class JobTimers {
  /** By `jobKey`, as are leases. */
  private readonly deadlines: Deadlines<string>;
  private readonly leases: Deadlines<string>;

  constructor(clock: Clock, expire: (job: JobRef) => void, release: (job: JobRef) => void) {
    this.deadlines = new Deadlines(clock, (key) => expire(jobRefOf(key)));
    this.leases = new Deadlines(clock, (key) => release(jobRefOf(key)));
  }

  /** Once committed: the timers follow the job. */
  committed(event: JobEvent): void {
    const key = jobKey(event.integration_id, event.job_id);
    switch (event.type) {
      case 'job.created':
        this.deadlines.set(key, event.deadline_at);
        break;
      case 'job.delivered':
      case 'job.started':
      case 'job.renewed':
        this.leases.set(key, event.lease_until);
        break;
      case 'job.released':
        this.leases.delete(key);
        break;
      default:
        this.deadlines.delete(key);
        this.leases.delete(key);
    }
  }

  /** Sets an open job's deadline, and its lease while it has one (a start). */
  arm(job: JobSnapshot): void {
    const { integration_id, job_id, deadline_at, lease_until } = job.context;
    this.deadlines.set(jobKey(integration_id, job_id), deadline_at);
    if (lease_until !== undefined) this.leases.set(jobKey(integration_id, job_id), lease_until);
  }

  /** This node no longer runs these jobs' timers (another node owns their integration). */
  disarm(jobs: readonly JobSnapshot[]): void {
    for (const { context } of jobs) {
      const key = jobKey(context.integration_id, context.job_id);
      this.deadlines.delete(key);
      this.leases.delete(key);
    }
  }

  stop(): void {
    this.deadlines.stop();
    this.leases.stop();
  }
}
