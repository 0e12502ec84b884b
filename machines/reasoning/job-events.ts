/**
 * The reasoning-job events: what the backend's event log stores of each job, one type per fact. A job's
 * state is the fold of these (machines/job.ts); time arrives as data (`at`, epoch ms), so a backend
 * restart rebuilds every job, lease and deadline exactly.
 */
import type { CodedError, JobPurpose } from '../../protocol/index.js';

/**
 * Which job: its integration and its `job_id`. The client chooses the id, so it is unique within its
 * integration only (PROTOCOL.md 6.7): two integrations may each have a job of the same id, two jobs.
 */
export interface JobRef {
  readonly integration_id: string;
  readonly job_id: string;
}

/** A job's identity as one string: what the backend keys its jobs, deadlines and leases by. Both ids are UUIDs, so no colon is in either. */
export function jobKey(integrationId: string, jobId: string): string {
  return `${integrationId}:${jobId}`;
}

/** The job a `jobKey` names. */
export function jobRefOf(key: string): JobRef {
  const colon = key.indexOf(':');
  return { integration_id: key.slice(0, colon), job_id: key.slice(colon + 1) };
}

interface JobFact extends JobRef {
  readonly at: number;
}

/** A client created the job (`POST …/jobs`); it waits for a plugin's stream. */
export interface JobCreated extends JobFact {
  readonly type: 'job.created';
  readonly purpose: JobPurpose;
  /** Plain JSON, or (`byo`) a BYO envelope the backend never reads. */
  readonly payload: Record<string, unknown>;
  readonly byo: boolean;
  readonly response_schema: Record<string, unknown>;
  readonly provider_kind: string;
  /** Epoch ms: past it, the job expires. */
  readonly deadline_at: number;
}

/** The job went out on the integration's stream; the plugin has until `lease_until` to say it runs it. */
export interface JobDelivered extends JobFact {
  readonly type: 'job.delivered';
  /** Counts the job's deliveries from 1: it was sent again after a reconnect, a takeover or a lapsed lease. */
  readonly delivery: number;
  /** The frame's id on the integration's stream: its deliveries counted from 1 (what `Last-Event-ID` names). */
  readonly seq: number;
  readonly lease_until: number;
}

/** The plugin runs the job; its heartbeats renew the lease while it does. */
export interface JobStarted extends JobFact {
  readonly type: 'job.started';
  readonly lease_until: number;
}

/** A heartbeat named the job among those running: the lease goes on. */
export interface JobRenewed extends JobFact {
  readonly type: 'job.renewed';
  readonly lease_until: number;
}

/** The lease lapsed with no word from the plugin: the job waits for a stream again, to be delivered anew. */
export interface JobReleased extends JobFact {
  readonly type: 'job.released';
}

export interface JobCompleted extends JobFact {
  readonly type: 'job.completed';
  /** Plain JSON that followed the job's `response_schema`, or (`byo` jobs) a BYO envelope. */
  readonly result: Record<string, unknown>;
}

/** The plugin reported a failure (its reasoner's, or a version it cannot handle). */
export interface JobFailed extends JobFact {
  readonly type: 'job.failed';
  readonly error: CodedError;
}

/** `deadline_at` passed before a result. */
export interface JobExpired extends JobFact {
  readonly type: 'job.expired';
}

/** The client cancelled the job. */
export interface JobCancelled extends JobFact {
  readonly type: 'job.cancelled';
}

export type JobEvent =
  JobCreated | JobDelivered | JobStarted | JobRenewed | JobReleased | JobCompleted | JobFailed | JobExpired | JobCancelled;
