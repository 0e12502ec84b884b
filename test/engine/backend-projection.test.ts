/**
 * The backend projection driven by events alone: a job is its integration's and its `job_id`'s, so two
 * integrations' jobs of one id fold, settle and are forgotten apart; a log written while a `job_id` was
 * the whole service's (its `backend.forgotten` naming jobs by id alone, its snapshot keyed by id) still
 * folds to the same state.
 */
import { describe, expect, it } from 'vitest';
import { forgettable } from '../../engine/reasoning/forgettable.js';
import { BackendProjection } from '../../engine/reasoning/projection.js';
import { backendSnapshotCodec } from '../../engine/reasoning/snapshot.js';
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import { jobState } from '../../machines/reasoning/job.js';
import { capabilityProfile } from '../../adapters/reasoners/profile.js';
import { integrationCreated, jobCreated } from '../support/backend-events.js';
import { format1Snapshot } from '../support/older-backend-log.js';

const C = 'c0000000-0000-4000-8000-00000000000c';
const D = 'd0000000-0000-4000-8000-00000000000d';
const X = '11111111-2222-4333-8444-555555555555';
const Y = '66666666-7777-4888-9999-000000000000';

const PROFILE = capabilityProfile({ providerKind: 'assistant-relay', models: [] });

/** C and D each have a job X (C's a probe that gives C its profile); D has a job Y too. D's X is cancelled, C's completed. */
const LOG: BackendEvent[] = [
  integrationCreated(C, 1),
  integrationCreated(D, 2),
  jobCreated(C, X, 3),
  jobCreated(D, X, 4, { purpose: 'live_analysis', payload: { other: true } }),
  jobCreated(D, Y, 5),
  { type: 'job.delivered', job_id: X, integration_id: D, delivery: 1, seq: 1, lease_until: 90_000, at: 6 },
  { type: 'job.completed', job_id: X, integration_id: C, result: PROFILE, at: 7 },
  { type: 'job.cancelled', job_id: X, integration_id: D, at: 8 },
];

function fold(events: readonly BackendEvent[], into = new BackendProjection()): BackendProjection {
  for (const event of events) into.apply(event);
  return into;
}

describe("backend projection: a job is its integration's", () => {
  it("folds two integrations' jobs of one id apart: each its own state, version, open list and stream position", () => {
    const p = fold(LOG);
    expect([jobState(p.job(C, X)!), jobState(p.job(D, X)!), jobState(p.job(D, Y)!)]).toEqual(['completed', 'cancelled', 'created']);
    expect([p.job(C, X)!.context.purpose, p.job(D, X)!.context.purpose]).toEqual(['capability_probe', 'live_analysis']);
    expect([p.version(C, X), p.version(D, X), p.version(C, Y)]).toEqual([2, 3, 0]);
    expect(p.job(C, Y)).toBeUndefined();
    expect([p.openJobs(C), p.openJobs(D).map((job) => job.context.job_id)]).toEqual([[], [Y]]);
    expect([p.lastSeq(C), p.lastSeq(D)]).toEqual([0, 1]);
    expect(p.profile(C)?.job_id).toBe(X);
    expect(p.profile(D)).toBeUndefined();
  });

  it("retention may forget D's X and not C's (C's profile comes from it), and a backend.forgotten naming D's leaves C's", () => {
    const p = fold(LOG);
    expect(forgettable(p.state(), 100, 100, 10)).toEqual({
      jobs: [{ integration_id: D, job_id: X }],
      pairing_ids: [],
      integration_ids: [],
      ticket_digests: [],
    });
    // `job_ids` is written for a node of the version before (a rolling deploy); `jobs` is what this version reads.
    fold(
      [
        {
          type: 'backend.forgotten',
          jobs: { [D]: [X] },
          job_ids: [X],
          pairing_ids: [],
          sent: Object.fromEntries(p.state().sent),
          ended_before: 100,
          at: 100,
        },
      ],
      p,
    );
    expect([p.job(D, X), jobState(p.job(C, X)!), p.version(D, X), p.version(C, X)]).toEqual([undefined, 'completed', 0, 2]);
    // Forgotten, D's X is as if never created: D may create a job X again.
    fold([jobCreated(D, X, 200)], p);
    expect([jobState(p.job(D, X)!), p.version(D, X)]).toEqual(['created', 1]);
  });

  it('an older log names forgotten jobs by job_id alone (each id was then one job): it folds as it did', () => {
    const older: BackendEvent[] = [
      integrationCreated(C, 1),
      jobCreated(C, X, 3, { purpose: 'live_analysis' }),
      { type: 'job.cancelled', job_id: X, integration_id: C, at: 4 },
      { type: 'backend.forgotten', job_ids: [X], pairing_ids: [], sent: {}, ended_before: 10, at: 10 },
    ];
    const p = fold(older);
    expect([p.job(C, X), p.version(C, X)]).toEqual([undefined, 0]);
    // What the log goes on with after the upgrade: D's job of that id, and a forgetting in the new form.
    fold([integrationCreated(D, 11), jobCreated(D, X, 12)], p);
    expect(jobState(p.job(D, X)!)).toBe('created');
  });

  it('passes over a format 1 snapshot (jobs keyed by job_id alone): the log is folded again', () => {
    const older = [
      integrationCreated(C, 1),
      integrationCreated(D, 2),
      jobCreated(C, X, 3),
      jobCreated(D, Y, 4),
      { type: 'job.cancelled', job_id: Y, integration_id: D, at: 5 } as BackendEvent,
    ];
    const format1 = format1Snapshot(older);
    expect(format1).not.toContain(`"${C}:${X}"`);
    expect(() => backendSnapshotCodec(new BackendProjection()).decode(format1)).toThrow(/not a backend snapshot of format 2/);
  });
});
