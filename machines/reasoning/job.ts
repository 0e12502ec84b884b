/**
 * The reasoning-job lifecycle (3.3, which the spec leaves unshown: ours, PROTOCOL.md section 6). A job
 * is open until a result, a failure, its deadline or its client ends it. While open it waits for a stream
 * (created), is on its way to the plugin under a delivery lease (delivered), or is being run (running);
 * delivery is at least once: a reconnect, a takeover or a lapsed lease sends it again, and the plugin
 * dedupes by `job_id`. A running job is not sent again (PROTOCOL.md 6e.1): its plugin has it, and if the
 * plugin went away, its lease lapses and it waits to be sent. The statechart folds logged events;
 * `jobDecider` decides them.
 *
 * | State          | Event         | Next           | Note                                                       |
 * |----------------|---------------|----------------|------------------------------------------------------------|
 * | open.created   | job.delivered | open.delivered | on the integration's stream, under a lease                 |
 * | open.created   | job.started   | open.running   | the plugin runs it though its lease had lapsed: it has it   |
 * | open.delivered | job.delivered | open.delivered | sent again: a new stream, or the lease lapsed while live   |
 * | open.delivered | job.started   | open.running   | the plugin runs it; heartbeats renew the lease             |
 * | open.running   | job.renewed   | open.running   | a heartbeat named it                                        |
 * | open.delivered | job.released  | open.created   | the lease lapsed: waits for a stream, to be sent again     |
 * | open.running   | job.released  | open.created   | the plugin went quiet past the lease                       |
 * | open.*         | job.completed | completed      | a result that follows `response_schema` (or a BYO envelope) |
 * | open.*         | job.failed    | failed         | the plugin reported why it could not                       |
 * | open.*         | job.expired   | expired        | `deadline_at` passed                                       |
 * | open.*         | job.cancelled | cancelled      | the client cancelled it                                    |
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import type { CodedError, JobPurpose } from '../../protocol/index.js';
import type { JobCompleted, JobCreated, JobDelivered, JobEvent, JobFailed, JobRenewed, JobStarted } from './job-events.js';
import { stepper } from '../core/step.js';

export interface JobContext {
  readonly job_id: string;
  readonly integration_id: string;
  readonly purpose: JobPurpose;
  readonly payload: Record<string, unknown>;
  readonly byo: boolean;
  readonly response_schema: Record<string, unknown>;
  readonly provider_kind: string;
  readonly created_at: number;
  readonly deadline_at: number;
  /** Deliveries so far. */
  readonly deliveries: number;
  /** The stream frame id of the latest delivery. */
  readonly seq: number | undefined;
  /** While delivered or running: when the lease lapses. */
  readonly lease_until: number | undefined;
  readonly settled_at: number | undefined;
  readonly result: Record<string, unknown> | undefined;
  readonly error: CodedError | undefined;
}

function initialContext(created: JobCreated): JobContext {
  return {
    job_id: created.job_id,
    integration_id: created.integration_id,
    purpose: created.purpose,
    payload: created.payload,
    byo: created.byo,
    response_schema: created.response_schema,
    provider_kind: created.provider_kind,
    created_at: created.at,
    deadline_at: created.deadline_at,
    deliveries: 0,
    seq: undefined,
    lease_until: undefined,
    settled_at: undefined,
    result: undefined,
    error: undefined,
  };
}

const SCRATCH = initialContext({
  type: 'job.created',
  job_id: '',
  integration_id: '',
  purpose: 'capability_probe',
  payload: {},
  byo: false,
  response_schema: {},
  provider_kind: '',
  deadline_at: 0,
  at: 0,
});

export const jobMachine = setup({
  types: {
    context: {} as JobContext,
    input: {} as JobCreated,
    events: {} as Exclude<JobEvent, JobCreated>,
  },
  actions: {
    deliver: assign((_, event: JobDelivered) => ({ deliveries: event.delivery, seq: event.seq, lease_until: event.lease_until })),
    lease: assign((_, event: JobStarted | JobRenewed) => ({ lease_until: event.lease_until })),
    release: assign({ lease_until: undefined }),
    complete: assign((_, event: JobCompleted) => ({ result: event.result, settled_at: event.at, lease_until: undefined })),
    fail: assign((_, event: JobFailed) => ({ error: event.error, settled_at: event.at, lease_until: undefined })),
    settle: assign((_, event: { readonly at: number }) => ({ settled_at: event.at, lease_until: undefined })),
  },
}).createMachine({
  id: 'job',
  // `transition()` evaluates this with no input when it builds its scratch actor: keep it total and cheap.
  context: ({ input }) => (input === undefined ? SCRATCH : initialContext(input)),
  initial: 'open',
  states: {
    open: {
      initial: 'created',
      states: {
        created: {
          on: {
            'job.delivered': { target: 'delivered', actions: { type: 'deliver', params: ({ event }) => event } },
            'job.started': { target: 'running', actions: { type: 'lease', params: ({ event }) => event } },
          },
        },
        delivered: {
          on: {
            'job.delivered': { target: 'delivered', actions: { type: 'deliver', params: ({ event }) => event } },
            'job.started': { target: 'running', actions: { type: 'lease', params: ({ event }) => event } },
            'job.released': { target: 'created', actions: 'release' },
          },
        },
        running: {
          on: {
            'job.renewed': { target: 'running', actions: { type: 'lease', params: ({ event }) => event } },
            'job.released': { target: 'created', actions: 'release' },
          },
        },
      },
      on: {
        'job.completed': { target: 'completed', actions: { type: 'complete', params: ({ event }) => event } },
        'job.failed': { target: 'failed', actions: { type: 'fail', params: ({ event }) => event } },
        'job.expired': { target: 'expired', actions: { type: 'settle', params: ({ event }) => event } },
        'job.cancelled': { target: 'cancelled', actions: { type: 'settle', params: ({ event }) => event } },
      },
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
    expired: { type: 'final' },
    cancelled: { type: 'final' },
  },
});

export type JobSnapshot = SnapshotFrom<typeof jobMachine>;

const job = stepper(jobMachine);

export function initialJob(created: JobCreated): JobSnapshot {
  return job.initial(created)[0];
}

/** Folds one logged event into the job. */
export function evolveJob(snapshot: JobSnapshot, event: Exclude<JobEvent, JobCreated>): JobSnapshot {
  return job.next(snapshot, event)[0];
}

/** `created`, `delivered`, `running` (open), or the final state. */
export function jobState(snapshot: JobSnapshot): 'created' | 'delivered' | 'running' | 'completed' | 'failed' | 'expired' | 'cancelled' {
  return typeof snapshot.value === 'string' ? (snapshot.value as 'completed') : (snapshot.value.open as 'created');
}

export function isSettled(snapshot: JobSnapshot): boolean {
  return snapshot.status === 'done';
}
