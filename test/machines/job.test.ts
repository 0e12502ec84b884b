/** The reasoning-job decider (3.3, ours): given(events) → when(command) → then(events). */
import { describe, expect, it } from 'vitest';
import { foldEvents } from '../../machines/core/decider.js';
import { jobDecider, type JobCommand } from '../../machines/reasoning/job-decider.js';
import type { JobCreated, JobEvent } from '../../machines/reasoning/job-events.js';
import { jobState } from '../../machines/reasoning/job.js';
import { deciderSpecification } from '../support/decider.js';

const spec = deciderSpecification(jobDecider);
const J = '11111111-2222-4333-8444-555555555555';
const I = 'int-1';
const ref = { integration_id: I, job_id: J };
const fact = (at: number) => ({ ...ref, at });

const created: JobCreated = {
  type: 'job.created',
  ...fact(0),
  purpose: 'live_analysis',
  payload: { session_id: 's', transcript: [{ speaker: 'a', text: 'hi' }] },
  byo: false,
  response_schema: { type: 'object' },
  provider_kind: 'assistant-relay',
  deadline_at: 30_000,
};
const { type: _event, ...fields } = created;
const create = (over: Partial<typeof fields> = {}): JobCommand => ({ type: 'create', ...fields, ...over });
const delivered = (delivery: number, at: number): JobEvent => ({
  type: 'job.delivered',
  ...fact(at),
  delivery,
  seq: delivery,
  lease_until: at + 60_000,
});
const started = (at: number): JobEvent => ({ type: 'job.started', ...fact(at), lease_until: at + 90_000 });
const completed = (at: number, result = { insights: [] }): JobEvent => ({ type: 'job.completed', ...fact(at), result });

describe('job decider: create', () => {
  it('creates a job that does not exist', () => {
    spec.given([]).when(create()).then([created], 'created');
  });

  it('the same create again is a duplicate; the same job_id with other content a conflict', () => {
    spec.given([created]).when(create()).thenNothing('duplicate');
    spec
      .given([created])
      .when(create({ payload: { other: true } }))
      .thenNothing('conflict');
  });
});

describe('job decider: delivery and leases', () => {
  it('delivers under a lease, counting deliveries', () => {
    spec
      .given([created])
      .when({ type: 'deliver', ...ref, seq: 7, lease_until: 60_100, at: 100 })
      .then([{ type: 'job.delivered', ...fact(100), delivery: 1, seq: 7, lease_until: 60_100 }], 'delivered');
    spec
      .given([created, delivered(1, 100)])
      .when({ type: 'deliver', ...ref, seq: 9, lease_until: 70_000, at: 10_000 })
      .then([{ type: 'job.delivered', ...fact(10_000), delivery: 2, seq: 9, lease_until: 70_000 }]);
  });

  it('does not send a running job again: its plugin has it (found by the model-based test: the statechart allowed it, no stream did it)', () => {
    spec
      .given([created, delivered(1, 100), started(200)])
      .when({ type: 'deliver', ...ref, seq: 9, lease_until: 70_000, at: 10_000 })
      .thenNothing('unchanged');
  });

  it('run starts a delivered (or released) job and renews a running one', () => {
    spec
      .given([created, delivered(1, 100)])
      .when({ type: 'run', ...ref, lease_until: 90_200, at: 200 })
      .then([started(200)], 'running');
    spec
      .given([created])
      .when({ type: 'run', ...ref, lease_until: 90_200, at: 200 })
      .then([started(200)], 'running');
    spec
      .given([created, delivered(1, 100), started(200)])
      .when({ type: 'run', ...ref, lease_until: 120_200, at: 30_200 })
      .then([{ type: 'job.renewed', ...fact(30_200), lease_until: 120_200 }], 'running');
  });

  it.each([
    { at: 60_099, outcome: 'unchanged', released: false },
    { at: 60_100, outcome: 'released', released: true },
  ] as const)('release at $at (lease until 60100): $outcome', ({ at, outcome, released }) => {
    spec
      .given([created, delivered(1, 100)])
      .when({ type: 'release', ...ref, at })
      .then(released ? [{ type: 'job.released', ...fact(at) }] : [], outcome);
  });

  it('a released job waits as created, to be delivered again', () => {
    const job = foldEvents(jobDecider, [created, delivered(1, 100), { type: 'job.released', ...fact(60_100) }])!;
    expect([jobState(job), job.context.lease_until, job.context.deliveries]).toEqual(['created', undefined, 1]);
  });
});

describe('job decider: how a job ends', () => {
  it('completes from any open state, once; the same result again is a duplicate, another a conflict', () => {
    for (const history of [[created], [created, delivered(1, 100)], [created, delivered(1, 100), started(200)]]) {
      spec
        .given(history)
        .when({ type: 'complete', ...ref, result: { insights: [] }, at: 300 })
        .then([completed(300)], 'completed');
    }
    spec
      .given([created, completed(300)])
      .when({ type: 'complete', ...ref, result: { insights: [] }, at: 400 })
      .thenNothing('duplicate');
    spec
      .given([created, completed(300)])
      .when({ type: 'complete', ...ref, result: { insights: ['x'] }, at: 400 })
      .thenNothing('conflict');
  });

  it('a failure report fails it; a result after it is refused as settled', () => {
    const error = { code: 'reasoner_error', message: 'the model is gone' };
    spec
      .given([created, delivered(1, 100)])
      .when({ type: 'fail', ...ref, error, at: 300 })
      .then([{ type: 'job.failed', ...fact(300), error }], 'failed');
    spec
      .given([created, { type: 'job.failed', ...fact(300), error }])
      .when({ type: 'fail', ...ref, error, at: 400 })
      .thenNothing('duplicate');
    spec
      .given([created, { type: 'job.failed', ...fact(300), error }])
      .when({ type: 'complete', ...ref, result: {}, at: 400 })
      .thenNothing('settled');
  });

  it('a result or a failure past the deadline expires the job instead', () => {
    spec
      .given([created, delivered(1, 100)])
      .when({ type: 'complete', ...ref, result: { insights: [] }, at: 30_000 })
      .then([{ type: 'job.expired', ...fact(30_000) }], 'expired');
    spec
      .given([created])
      .when({ type: 'fail', ...ref, error: { code: 'x', message: 'y' }, at: 31_000 })
      .then([{ type: 'job.expired', ...fact(31_000) }], 'expired');
  });

  it.each([
    { at: 29_999, outcome: 'unchanged' },
    { at: 30_000, outcome: 'expired' },
  ] as const)('expire at $at (deadline 30000): $outcome', ({ at, outcome }) => {
    spec
      .given([created, delivered(1, 100)])
      .when({ type: 'expire', ...ref, at })
      .then(outcome === 'expired' ? [{ type: 'job.expired', ...fact(at) }] : [], outcome);
  });

  it('cancel ends an open job; again it is a duplicate; a completed job stays completed', () => {
    spec
      .given([created])
      .when({ type: 'cancel', ...ref, at: 5 })
      .then([{ type: 'job.cancelled', ...fact(5) }], 'cancelled');
    spec
      .given([created, { type: 'job.cancelled', ...fact(5) }])
      .when({ type: 'cancel', ...ref, at: 6 })
      .thenNothing('duplicate');
    spec
      .given([created, completed(300)])
      .when({ type: 'cancel', ...ref, at: 400 })
      .thenNothing('settled');
  });

  it('a settled job is delivered and run no more', () => {
    spec
      .given([created, completed(300)])
      .when({ type: 'deliver', ...ref, seq: 3, lease_until: 1, at: 400 })
      .thenNothing('settled');
    spec
      .given([created, completed(300)])
      .when({ type: 'run', ...ref, lease_until: 1, at: 400 })
      .thenNothing('settled');
  });

  it('commands for a job the log never created are unknown', () => {
    spec
      .given([])
      .when({ type: 'cancel', ...ref, at: 1 })
      .thenNothing('unknown');
  });

  it("a job is its integration's: a command naming the same job_id in another integration finds no job, whatever it asks", () => {
    const elsewhere = { integration_id: 'int-2', job_id: J };
    for (const command of [
      { type: 'cancel', ...elsewhere, at: 5 },
      { type: 'complete', ...elsewhere, result: { insights: [] }, at: 300 },
      { type: 'fail', ...elsewhere, error: { code: 'x', message: 'y' }, at: 300 },
      { type: 'run', ...elsewhere, lease_until: 90_000, at: 200 },
      { type: 'deliver', ...elsewhere, seq: 1, lease_until: 90_000, at: 200 },
      { type: 'release', ...elsewhere, at: 200_000 },
      { type: 'expire', ...elsewhere, at: 31_000 },
    ] satisfies JobCommand[]) {
      spec
        .given([created, delivered(1, 100)])
        .when(command)
        .thenNothing('unknown');
    }
  });
});
