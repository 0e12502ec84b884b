/**
 * The backend's quotas (PROTOCOL.md 6e.18 to 6e.21), given(events) → when(the decision) → then(a refusal
 * with its Retry-After, or none): open jobs, jobs a minute, stream opens a minute, status changes, key
 * rotations; and the job decider's renewals
 * of a lease, which a heartbeat flood must not log one by one.
 */
import { describe, expect, it } from 'vitest';
import type { IntegrationEvent } from '../../machines/reasoning/backend-events.js';
import { foldEvents } from '../../machines/core/decider.js';
import { evolveIntegration, initialIntegration, REKEY_TIMES_KEPT, type IntegrationSnapshot } from '../../machines/reasoning/integration.js';
import { jobDecider } from '../../machines/reasoning/job-decider.js';
import type { JobCreated, JobEvent } from '../../machines/reasoning/job-events.js';
import { isSettled, type JobSnapshot } from '../../machines/reasoning/job.js';
import {
  countOneMore,
  overJobRate,
  overOpenJobs,
  overRekeys,
  overStatusChanges,
  overStreamOpens,
  quotasOf,
  RATE_WINDOW_MS,
  REKEY_WINDOW_MS,
  type WindowCount,
} from '../../machines/reasoning/quotas.js';
import { deciderSpecification } from '../support/decider.js';

const I = 'int-1';
const HOUR = REKEY_WINDOW_MS;

/** The integration as its events leave it. */
function integrationAfter(events: readonly IntegrationEvent[]): IntegrationSnapshot {
  const [created, ...rest] = events;
  return rest.reduce(
    (snapshot, event) => evolveIntegration(snapshot, event as Parameters<typeof evolveIntegration>[1]),
    initialIntegration(created as never),
  );
}

/** The open jobs its job events leave. */
function openJobsAfter(events: readonly JobEvent[]): JobSnapshot[] {
  const jobs = new Map<string, JobSnapshot>();
  for (const event of events) jobs.set(event.job_id, jobDecider.evolve(jobs.get(event.job_id), event)!);
  return [...jobs.values()].filter((job) => !isSettled(job));
}

const created: IntegrationEvent = {
  type: 'integration.created',
  integration_id: I,
  provider_kind: 'assistant-relay',
  relay_token_digest: 'r',
  client_token_digest: 'c',
  at: 0,
};
const seen = (at: number, status: 'ready' | 'busy' = 'ready'): IntegrationEvent => ({
  type: 'integration.seen',
  integration_id: I,
  plugin: { name: 'p', version: '1' },
  reasoner: { name: 'builtin' },
  status,
  schema_versions: { min: 1, max: 1 },
  envelope_versions: { min: 1, max: 1 },
  at,
});
const rekeyRequested = (id: string, at: number): IntegrationEvent => ({
  type: 'integration.rekey_requested',
  integration_id: I,
  rekey_id: id,
  kid: 'k',
  client_key: 'c',
  mac: 'm',
  at,
});
const rekeyAnswered = (id: string, at: number): IntegrationEvent => ({
  type: 'integration.rekey_answered',
  integration_id: I,
  rekey_id: id,
  assistant_key: 'a',
  mac: 'n',
  at,
});
const jobCreated = (n: number, deadline_at: number): JobCreated => ({
  type: 'job.created',
  job_id: `job-${n}`,
  integration_id: I,
  purpose: 'capability_probe',
  payload: {},
  byo: false,
  response_schema: {},
  provider_kind: 'assistant-relay',
  deadline_at,
  at: 0,
});

describe('open jobs (6e.18)', () => {
  it('given fewer open jobs than the limit, when a new one is created, then it is let through', () => {
    expect(overOpenJobs(openJobsAfter([jobCreated(1, 60_000)]), 2, 1_000)).toBeUndefined();
  });

  it('given the limit open, when a new one is created, then it is refused until the earliest deadline, in whole seconds rounded up', () => {
    const open = openJobsAfter([jobCreated(1, 60_000), jobCreated(2, 15_500), jobCreated(3, 40_000)]);
    expect(overOpenJobs(open, 3, 1_000)).toEqual({
      over: 'too_many_open_jobs',
      retry_after_s: 15,
      message: expect.stringContaining('3 open jobs, the most it may have (3)'),
    });
  });

  it('given the limit reached with one job settled since, when a new one is created, then the settled one frees its slot', () => {
    const open = openJobsAfter([
      jobCreated(1, 60_000),
      jobCreated(2, 60_000),
      { type: 'job.cancelled', job_id: 'job-2', integration_id: I, at: 500 },
    ]);
    expect(overOpenJobs(open, 2, 1_000)).toBeUndefined();
  });

  it('given a job past its deadline not yet expired, when a new one is created, then Retry-After is 1 s, never 0 or less', () => {
    expect(overOpenJobs(openJobsAfter([jobCreated(1, 500)]), 1, 9_000)?.retry_after_s).toBe(1);
  });
});

describe('status changes (6e.20)', () => {
  it('given an online integration seen at 0, when news comes 10 s later (interval 30 s), then it is refused for the 20 s left', () => {
    expect(overStatusChanges(integrationAfter([created, seen(0)]), 30_000, 10_000)).toEqual({
      over: 'too_many_status_changes',
      retry_after_s: 20,
      message: expect.any(String),
    });
  });

  it('given an online integration seen at 0, when news comes at the interval, then it is logged', () => {
    expect(overStatusChanges(integrationAfter([created, seen(0)]), 30_000, 30_000)).toBeUndefined();
  });

  it('given an integration unseen, or offline since, when news comes at once, then it is logged: coming online always is', () => {
    expect(overStatusChanges(integrationAfter([created]), 30_000, 1)).toBeUndefined();
    expect(
      overStatusChanges(integrationAfter([created, seen(0), { type: 'integration.offline', integration_id: I, at: 5_000 }]), 30_000, 5_001),
    ).toBeUndefined();
  });

  it('given an interval of 0, when news comes at once, then it is logged', () => {
    expect(overStatusChanges(integrationAfter([created, seen(0)]), 0, 0)).toBeUndefined();
  });
});

describe('key rotations (6e.21)', () => {
  const quotas = { maxRekeysPerHour: 3, rekeyReplaceAfterMs: 600_000 };

  it('given none asked for, when one is, then it is let through', () => {
    expect(overRekeys(integrationAfter([created]), quotas, 1_000)).toBeUndefined();
  });

  it('given one unanswered, when another comes before it may be replaced, then rekey_pending until then; at that age it may be', () => {
    const integration = integrationAfter([created, rekeyRequested('a', 1_000)]);
    expect(overRekeys(integration, quotas, 61_000)).toEqual({
      over: 'rekey_pending',
      retry_after_s: 540,
      message: expect.stringContaining('key rotation a waits'),
    });
    expect(overRekeys(integration, quotas, 601_000)).toBeUndefined();
  });

  it("given the hour's rotations asked for and answered, when one more comes, then too_many_rekeys until the oldest of them is an hour old", () => {
    const integration = integrationAfter([
      created,
      rekeyRequested('a', 1_000),
      rekeyAnswered('a', 1_100),
      rekeyRequested('b', 2_000),
      rekeyAnswered('b', 2_100),
      rekeyRequested('c', 3_000),
      rekeyAnswered('c', 3_100),
    ]);
    expect(overRekeys(integration, quotas, 10_000)).toEqual({
      over: 'too_many_rekeys',
      retry_after_s: (HOUR + 1_000 - 10_000) / 1000,
      message: expect.stringContaining('3 key rotations in the last hour'),
    });
    expect(overRekeys(integration, quotas, HOUR + 1_000)).toBeUndefined();
  });

  it('keeps the times of the last rotations only: the fold stays bounded however many are asked for', () => {
    const events: IntegrationEvent[] = [created];
    for (let i = 0; i < 100; i += 1) events.push(rekeyRequested(`r${i}`, i * HOUR), rekeyAnswered(`r${i}`, i * HOUR + 1));
    expect(integrationAfter(events).context.rekeys_at).toHaveLength(REKEY_TIMES_KEPT);
  });
});

describe("renewals of a running job's lease (6e.2)", () => {
  const spec = deciderSpecification(jobDecider);
  const J = 'job-1';
  const fact = (at: number) => ({ job_id: J, integration_id: I, at });
  const history: JobEvent[] = [
    jobCreated(1, 3_600_000),
    { type: 'job.delivered', ...fact(0), delivery: 1, seq: 1, lease_until: 90_000 },
    { type: 'job.started', ...fact(1_000), lease_until: 91_000 },
  ];

  it('given a job started at 1 s under a 90 s lease, when it is said to run again 10 s later, then nothing is logged and it runs', () => {
    spec.given(history).when({ type: 'run', job_id: J, integration_id: I, lease_until: 101_000, at: 11_000 }).thenNothing('running');
  });

  it('given the same, when a third of a lease has passed, then the renewal is logged', () => {
    spec
      .given(history)
      .when({ type: 'run', job_id: J, integration_id: I, lease_until: 121_000, at: 31_000 })
      .then([{ type: 'job.renewed', ...fact(31_000), lease_until: 121_000 }], 'running');
  });

  it('a flood of runs logs one renewal per third of a lease', () => {
    let events = [...history];
    for (let at = 1_001; at <= 95_000; at += 100) {
      const decision = jobDecider.decide(
        { type: 'run', job_id: J, integration_id: I, lease_until: at + 90_000, at },
        foldEvents(jobDecider, events),
      );
      events = [...events, ...decision.events];
    }
    expect(events.filter((event) => event.type === 'job.renewed')).toHaveLength(3);
  });
});

/** What `job.created` events at these times leave in the fold (projection.ts counts each by its `at`). */
function createdAt(...times: number[]): WindowCount | undefined {
  return times.reduce<WindowCount | undefined>((count, at) => countOneMore(count, at), undefined);
}

const MINUTE = RATE_WINDOW_MS;

describe('jobs a minute (6e.23)', () => {
  it('given fewer creates this minute than the limit, when one more comes, then it is let through', () => {
    expect(overJobRate(createdAt(), 2, 5_000)).toBeUndefined();
    expect(overJobRate(createdAt(1_000), 2, 5_000)).toBeUndefined();
  });

  it('given the limit created this minute (a client cancelling each at once), when one more comes, then it is refused until the minute ends', () => {
    expect(overJobRate(createdAt(1_000, 2_000), 2, 5_000)).toMatchObject({ over: 'too_many_jobs', retry_after_s: 55 });
    expect(overJobRate(createdAt(1_000, 2_000), 2, MINUTE - 1)).toMatchObject({ retry_after_s: 1 });
  });

  it('given the limit created in an earlier minute, when one comes in the next, then it is let through and counted afresh', () => {
    expect(overJobRate(createdAt(1_000, 2_000), 2, MINUTE)).toBeUndefined();
    expect(createdAt(1_000, 2_000, MINUTE + 5)).toEqual({ window: MINUTE, count: 1 });
  });

  it("given a create logged with another node's clock a little behind, when it is folded, then it counts in the newest minute", () => {
    expect(createdAt(MINUTE + 5, MINUTE - 5)).toEqual({ window: MINUTE, count: 2 });
    expect(overJobRate(createdAt(MINUTE + 5, MINUTE - 5), 2, MINUTE + 10)).toMatchObject({ over: 'too_many_jobs' });
  });
});

describe('plugin stream opens a minute (6e.24)', () => {
  it('given the limit opened this minute, when one more opens, then it is refused until the minute ends; the next minute lets it through', () => {
    const opened = createdAt(0, 250, 500);
    expect(overStreamOpens(createdAt(0, 250), 3, 750)).toBeUndefined();
    expect(overStreamOpens(opened, 3, 750)).toMatchObject({ over: 'too_many_stream_opens', retry_after_s: 60 });
    expect(overStreamOpens(opened, 3, MINUTE)).toBeUndefined();
  });
});

describe('quotasOf', () => {
  it('takes the defaults, the status interval from the heartbeat interval, and refuses limits that cannot work', () => {
    expect(quotasOf({}, 30_000)).toEqual({
      maxOpenJobs: 32,
      maxFollowers: 64,
      maxNodeFollowers: 1024,
      statusIntervalMs: 30_000,
      maxRekeysPerHour: 6,
      rekeyReplaceAfterMs: 600_000,
      maxJobsPerMinute: 60,
      maxSettledJobs: 1000,
      maxStreamsPerMinute: 10,
    });
    for (const bad of [
      { maxOpenJobs: 0 },
      { maxJobsPerMinute: 0 },
      { maxSettledJobs: 0 },
      { maxStreamsPerMinute: 2.5 },
      { maxFollowers: 1.5 },
      { maxRekeysPerHour: REKEY_TIMES_KEPT + 1 },
      { statusIntervalMs: 60_001 },
      { statusIntervalMs: -1 },
      { rekeyReplaceAfterMs: -1 },
    ]) {
      expect(() => quotasOf(bad, 30_000), JSON.stringify(bad)).toThrow(RangeError);
    }
  });
});
