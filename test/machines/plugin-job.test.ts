/** The plugin-job decider (the plugin's side of PROTOCOL.md 6d): given(events) → when(command) → then(events). */
import { describe, expect, it } from 'vitest';
import { foldEvents } from '../../machines/core/decider.js';
import {
  FORGOTTEN,
  owed,
  pluginJobDecider,
  type BackendAnswer,
  type PluginJobCommand,
} from '../../machines/reasoning/plugin-job-decider.js';
import type { PluginJobEvent } from '../../machines/reasoning/plugin-job-events.js';
import { pluginJobStage, type PluginJobSnapshot } from '../../machines/reasoning/plugin-job.js';
import { JOB_ERRORS } from '../../protocol/errors.js';
import { deciderSpecification, thenOf } from '../support/decider.js';

const spec = deciderSpecification(pluginJobDecider);
const job_id = '11111111-2222-4333-8444-555555555555';
const envelope = { job_id, deadline_at: '2026-01-01T00:00:30.000Z' };
const received: PluginJobEvent = { type: 'plugin.job_received', job_id, job: envelope, cursor: '7', at: 1 };
const started: PluginJobEvent = { type: 'plugin.job_started', job_id, at: 2 };
const refused: PluginJobEvent = { type: 'plugin.job_refused', job_id, at: 2 };
const result = { result: { insights: [] } };
const finished: PluginJobEvent = { type: 'plugin.job_finished', job_id, outcome: result, at: 3 };
const closed: PluginJobEvent = { type: 'plugin.job_closed', job_id, reason: 'posted', status: 200, at: 4 };
const answered = (status: number, message?: string): BackendAnswer => ({
  kind: 'answered',
  status,
  ...(message === undefined ? {} : { message }),
});
const gaveUp: BackendAnswer = { kind: 'gave_up' };
const receive: PluginJobCommand = { type: 'receive', job_id, job: envelope, cursor: '7', at: 1 };
const ran = (answer: BackendAnswer, at = 5): PluginJobCommand => ({ type: 'ran', job_id, answer, at });
const posted = (answer: BackendAnswer, at = 5): PluginJobCommand => ({ type: 'posted', job_id, answer, at });

describe('plugin-job decider: a frame of the stream', () => {
  it('receives a job it has never seen, with the cursor that carried it', () => {
    spec.given([]).when(receive).then([received], 'received');
  });

  it('never runs a job twice: seen, it is unchanged; refused, it runs now; closed, its outcome is posted again; forgotten, it is not run', () => {
    spec.given([received]).when(receive).thenNothing('unchanged');
    spec.given([received, started]).when(receive).thenNothing('unchanged');
    spec.given([received, refused]).when(receive).thenNothing('resent');
    spec.given([received, started, finished, closed]).when(receive).thenNothing('closed_resent');
    // Closed with nothing to post (the backend had ended it): nothing to send again.
    spec
      .given([received, { ...closed, reason: 'settled', status: 409 }])
      .when(receive)
      .thenNothing('unchanged');
    thenOf(pluginJobDecider.decide(receive, FORGOTTEN)).thenNothing('forgotten');
  });
});

describe('plugin-job decider: the answer to the running POST', () => {
  it('200 starts it; 403 leaves it refused; a gave-up fails it deadline_exceeded; any other answer closes it', () => {
    spec
      .given([received])
      .when(ran(answered(200)))
      .then([{ ...started, at: 5 }], 'started');
    spec
      .given([received, started])
      .when(ran(answered(200)))
      .then([{ ...started, at: 5 }], 'started');
    spec
      .given([received, refused])
      .when(ran(answered(403)))
      .then([{ ...refused, at: 5 }], 'refused');
    spec
      .given([received])
      .when(ran(gaveUp))
      .then(
        [
          {
            type: 'plugin.job_finished',
            job_id,
            outcome: { error: { code: 'deadline_exceeded', message: 'the backend could not be told the job runs before its deadline' } },
            at: 5,
          },
        ],
        'finished',
      );
    spec
      .given([received])
      .when(ran(answered(409)))
      .then([{ type: 'plugin.job_closed', job_id, reason: 'settled', status: 409, at: 5 }], 'closed');
    spec
      .given([received])
      .when(ran(answered(404)))
      .then([{ type: 'plugin.job_closed', job_id, reason: 'rejected', status: 404, at: 5 }], 'closed');
  });

  it('changes nothing of a job finished, closed or unknown', () => {
    spec
      .given([received, started, finished])
      .when(ran(answered(200)))
      .thenNothing('unchanged');
    spec
      .given([received, started, finished, closed])
      .when(ran(answered(200)))
      .thenNothing('unchanged');
    spec
      .given([])
      .when(ran(answered(200)))
      .thenNothing('unchanged');
  });
});

describe('plugin-job decider: an outcome, and its POST', () => {
  it('records an outcome (a later one replaces it), but not for a closed job', () => {
    spec.given([received, started]).when({ type: 'finish', job_id, outcome: result, at: 3 }).then([finished], 'finished');
    spec.given([received, started, finished, closed]).when({ type: 'finish', job_id, outcome: result, at: 6 }).thenNothing('unchanged');
  });

  it("records a BYO job's failure in the catalogue's words only, never words that could quote its plaintext", () => {
    const byo: PluginJobEvent = { ...received, job: { ...envelope, byo: true } };
    const outcome = { error: { code: 'reasoner_error', message: 'the plaintext said: secret' } };
    spec
      .given([byo, started])
      .when({ type: 'finish', job_id, outcome, at: 3 })
      .then(
        [
          {
            type: 'plugin.job_finished',
            job_id,
            outcome: { error: { code: 'reasoner_error', message: JOB_ERRORS.reasoner_error } },
            at: 3,
          },
        ],
        'finished',
      );
  });

  it('closes it as the answer says: posted, settled, rejected, gave up', () => {
    const given = [received, started, finished];
    spec
      .given(given)
      .when(posted(answered(200)))
      .then([{ ...closed, at: 5 }], 'closed');
    spec
      .given(given)
      .when(posted(answered(409)))
      .then([{ ...closed, reason: 'settled', status: 409, at: 5 }], 'closed');
    spec
      .given(given)
      .when(posted(answered(400)))
      .then([{ ...closed, reason: 'rejected', status: 400, at: 5 }], 'closed');
    spec
      .given(given)
      .when(posted(gaveUp))
      .then([{ type: 'plugin.job_closed', job_id, reason: 'gave_up', at: 5 }], 'closed');
  });

  it('reports a result the backend finds invalid (422) or too large (413) as a failure, to post instead; a failure refused so is closed', () => {
    const given = [received, started, finished];
    spec
      .given(given)
      .when(posted(answered(422, 'no')))
      .then([{ type: 'plugin.job_finished', job_id, outcome: { error: { code: 'invalid_result', message: 'no' } }, at: 5 }], 'finished');
    spec
      .given(given)
      .when(posted(answered(413)))
      .then(
        [
          {
            type: 'plugin.job_finished',
            job_id,
            outcome: { error: { code: 'invalid_result', message: JOB_ERRORS.invalid_result } },
            at: 5,
          },
        ],
        'finished',
      );
    const failed: PluginJobEvent = { ...finished, outcome: { error: { code: 'reasoner_error', message: 'm' } } };
    spec
      .given([received, started, failed])
      .when(posted(answered(422)))
      .then([{ ...closed, reason: 'rejected', status: 422, at: 5 }], 'closed');
  });

  it('posts nothing for a job not finished', () => {
    spec
      .given([received, started])
      .when(posted(answered(200)))
      .thenNothing('unchanged');
  });
});

describe('plugin-job decider: its fold', () => {
  it('says what a start owes each job: a run until it is finished, then the POST of its outcome, then nothing', () => {
    const owes = (events: PluginJobEvent[]) => owed(foldEvents(pluginJobDecider, events) as PluginJobSnapshot);
    expect([[received], [received, started], [received, refused], [received, finished], [received, finished, closed]].map(owes)).toEqual([
      'run',
      'run',
      'run',
      'post',
      undefined,
    ]);
    expect(pluginJobStage(foldEvents(pluginJobDecider, [received, refused, started]) as PluginJobSnapshot)).toBe('started');
  });

  it('refuses a log that receives a job twice, or tells of a job it never received', () => {
    expect(() => foldEvents(pluginJobDecider, [received, received])).toThrow(/received twice/);
    expect(() => foldEvents(pluginJobDecider, [started])).toThrow(/not a job the plugin holds/);
    expect(pluginJobStage(pluginJobDecider.evolve(FORGOTTEN, received) as PluginJobSnapshot)).toBe('received');
  });
});
