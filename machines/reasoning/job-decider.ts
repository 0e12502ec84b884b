/**
 * The reasoning-job decider: what a command means for one job, as events. Its state is the job
 * statechart's snapshot, or `undefined` for a job the log has not created. A command names its job by
 * integration and `job_id` (`JobRef`): a job of the same id in another integration is another job, so it
 * is unknown to the command. Pure: time arrives on the command, and so does everything the edge has
 * already checked (a result is valid for the job's `response_schema` before it is ever a command).
 */
import equal from 'fast-deep-equal';
import type { CodedError } from '../../protocol/index.js';
import { openedBy, type Decider, type Decision } from '../core/decider.js';
import { jobKey, type JobCreated, type JobEvent, type JobRef } from './job-events.js';
import { evolveJob, initialJob, isSettled, jobState, type JobSnapshot } from './job.js';

export type JobCommand =
  /** A client's create: the job's fields as `job.created` will log them. */
  | ({ readonly type: 'create' } & Omit<JobCreated, 'type'>)
  /** Send it on the integration's live stream, under a lease until `lease_until`. */
  | ({ readonly type: 'deliver'; readonly seq: number; readonly lease_until: number; readonly at: number } & JobRef)
  /** The plugin runs it (it said so, or a heartbeat named it): the lease goes on to `lease_until`. */
  | ({ readonly type: 'run'; readonly lease_until: number; readonly at: number } & JobRef)
  /** The lease may have lapsed. */
  | ({ readonly type: 'release'; readonly at: number } & JobRef)
  | ({ readonly type: 'complete'; readonly result: Record<string, unknown>; readonly at: number } & JobRef)
  | ({ readonly type: 'fail'; readonly error: CodedError; readonly at: number } & JobRef)
  /** The deadline may have passed. */
  | ({ readonly type: 'expire'; readonly at: number } & JobRef)
  | ({ readonly type: 'cancel'; readonly at: number } & JobRef);

export type JobOutcome =
  | 'created'
  | 'delivered'
  | 'running'
  | 'released'
  | 'completed'
  | 'failed'
  | 'expired'
  | 'cancelled'
  /** The same create, result, failure or cancel again: nothing to log, the same answer. */
  | 'duplicate'
  /** A create with the same `job_id` and other content, or another result for a settled job. */
  | 'conflict'
  /** A result, failure or run for a job that has ended otherwise (expired, cancelled, failed, completed). */
  | 'settled'
  | 'unknown'
  | 'unchanged';

export type JobDeciderState = JobSnapshot | undefined;
type JobDecision = Decision<JobEvent, JobOutcome>;

const nothing = (outcome: JobOutcome): JobDecision => ({ events: [], outcome });

/** The job as a create would make it, to compare a retried create with. */
function sameCreate(job: JobSnapshot, command: Extract<JobCommand, { type: 'create' }>): boolean {
  const c = job.context;
  return (
    c.integration_id === command.integration_id &&
    c.purpose === command.purpose &&
    c.byo === command.byo &&
    equal(c.payload, command.payload) &&
    equal(c.response_schema, command.response_schema)
  );
}

function decide(command: JobCommand, job: JobDeciderState): JobDecision {
  const { job_id, at } = command;
  if (command.type === 'create') {
    if (job !== undefined) return nothing(sameCreate(job, command) ? 'duplicate' : 'conflict');
    const { type: _command, ...fields } = command;
    return { events: [{ type: 'job.created', ...fields }], outcome: 'created' };
  }
  if (job === undefined || job.context.integration_id !== command.integration_id) return nothing('unknown');
  const fact = { job_id, integration_id: command.integration_id, at };
  const state = jobState(job);
  switch (command.type) {
    case 'deliver':
      if (isSettled(job)) return nothing('settled');
      // Its plugin has it (PROTOCOL.md 6e.1).
      if (state === 'running') return nothing('unchanged');
      return {
        events: [
          { type: 'job.delivered', ...fact, delivery: job.context.deliveries + 1, seq: command.seq, lease_until: command.lease_until },
        ],
        outcome: 'delivered',
      };
    case 'run':
      if (isSettled(job)) return nothing('settled');
      if (state !== 'running') return { events: [{ type: 'job.started', ...fact, lease_until: command.lease_until }], outcome: 'running' };
      // A renewal is logged once at least a third of a lease has passed since the last: a plugin that says so more often moves no lease (PROTOCOL.md 6e.2).
      if (command.lease_until - job.context.lease_until! < (command.lease_until - at) / 3) return nothing('running');
      return { events: [{ type: 'job.renewed', ...fact, lease_until: command.lease_until }], outcome: 'running' };
    case 'release': {
      const { lease_until } = job.context;
      if ((state !== 'delivered' && state !== 'running') || lease_until === undefined || at < lease_until) return nothing('unchanged');
      return { events: [{ type: 'job.released', ...fact }], outcome: 'released' };
    }
    case 'complete':
    case 'fail': {
      // Past its deadline a job is over, whatever comes: it expires now if its timer has not fired yet.
      if (!isSettled(job) && at >= job.context.deadline_at) return { events: [{ type: 'job.expired', ...fact }], outcome: 'expired' };
      if (command.type === 'complete') {
        if (isSettled(job))
          return nothing(state !== 'completed' ? 'settled' : equal(job.context.result, command.result) ? 'duplicate' : 'conflict');
        return { events: [{ type: 'job.completed', ...fact, result: command.result }], outcome: 'completed' };
      }
      // The same failure again is a duplicate; a job that ended otherwise stays as it ended.
      if (isSettled(job)) return nothing(state === 'failed' && equal(job.context.error, command.error) ? 'duplicate' : 'settled');
      return { events: [{ type: 'job.failed', ...fact, error: command.error }], outcome: 'failed' };
    }
    case 'expire':
      if (isSettled(job) || at < job.context.deadline_at) return nothing('unchanged');
      return { events: [{ type: 'job.expired', ...fact }], outcome: 'expired' };
    case 'cancel':
      if (isSettled(job)) return nothing(state === 'cancelled' ? 'duplicate' : 'settled');
      return { events: [{ type: 'job.cancelled', ...fact }], outcome: 'cancelled' };
  }
}

export const jobDecider: Decider<JobDeciderState, JobCommand, JobEvent, JobOutcome> = openedBy({
  name: 'reasoning job',
  idOf: (event) => jobKey(event.integration_id, event.job_id),
  decide,
  opens: (event): event is JobCreated => event.type === 'job.created',
  open: initialJob,
  step: evolveJob,
});
