/**
 * The backend relay's checks (spec 4.1, 2.1, 5, 6.1; PROTOCOL.md 6, 6e where the spec is silent): the
 * job stream and its envelopes, heartbeat, completion, redelivery after a dropped stream and none of a
 * settled job, the job's deadline, and the client's routes. The kit is the integration's plugin and its
 * client (backend-wire.ts).
 */
import { pause } from './arrivals.js';
import { dataObject } from './wire-stream.js';
import { rule, shown, type Check } from './check.js';
import {
  LIVE_ANALYSIS,
  LIVE_RESULT,
  asPlugin,
  completedJob,
  createJob,
  newJobStream,
  sharedStream,
  readJob,
  openStream,
  untilDelivered,
  type BackendRelayContext,
} from './backend-wire.js';
import { isDeepStrictEqual } from 'node:util';

/** The heartbeat a plugin of this release sends (PROTOCOL.md 6.4). */
const HEARTBEAT = {
  plugin: { name: 'assistant-relay-conformance', version: '1.0.0' },
  provider_kind: 'assistant-relay',
  schema_versions: { min: 1, max: 1 },
  envelope_versions: { min: 1, max: 1 },
  status: 'ready',
  running_job_ids: [],
  reasoner: { name: 'conformance' },
};

export const BACKEND_RELAY_CHECKS: readonly Check<BackendRelayContext>[] = [
  {
    id: 'backend.stream-auth',
    spec: '5',
    title: 'the job stream takes the RELAY_TOKEN only: none, a wrong one or the client token is refused 401',
    async run(context, scope) {
      for (const [what, token] of [
        ['no token', undefined],
        ['a wrong token', `${context.relayToken}x`],
        ['the client token', context.clientToken],
      ] as const) {
        const { response } = await openStream(context, scope, '/stream', token ?? '');
        rule(response.status === 401, `the job stream with ${what} answered ${response.status}`);
      }
    },
  },
  {
    id: 'backend.envelope',
    spec: '2.1',
    title: 'a created job is delivered on the stream as a ReasoningJob envelope with every field of 2.1',
    async run(context, scope) {
      const stream = await sharedStream(context, scope);
      const jobId = await createJob(context, scope);
      const { job } = await untilDelivered(context, stream, jobId);
      rule(job.event_type === 'reasoning_job', `event_type is ${shown(job.event_type)}`);
      rule(job.purpose === 'live_analysis', `purpose is ${shown(job.purpose)}, not live_analysis as created`);
      rule(
        typeof job.deadline_at === 'string' && !Number.isNaN(Date.parse(job.deadline_at)),
        `deadline_at is ${shown(job.deadline_at)}, not an ISO 8601 time`,
      );
      rule(
        job.schema_version === 1 && job.envelope_version === 1,
        `schema_version ${shown(job.schema_version)} and envelope_version ${shown(job.envelope_version)}, not 1 and 1`,
      );
      rule(typeof job.response_schema === 'object' && job.response_schema !== null, `response_schema is ${shown(job.response_schema)}`);
      rule(isDeepStrictEqual(job.payload, LIVE_ANALYSIS), `the payload is ${shown(job.payload)}, not as created`);
      rule(typeof job.provider_kind === 'string' && job.provider_kind !== '', `provider_kind is ${shown(job.provider_kind)}`);
    },
  },
  {
    id: 'backend.heartbeat',
    spec: '4.1 heartbeat',
    title: 'a heartbeat with the RELAY_TOKEN is answered 200 {ok: true, interval_s}',
    async run(context, scope) {
      const answer = await asPlugin(context, scope, '/heartbeat', HEARTBEAT);
      rule(answer.status === 200, `the heartbeat answered ${answer.status}: ${shown(answer.text)}`);
      const body = answer.body as { ok?: unknown; interval_s?: unknown };
      rule(body?.ok === true && typeof body.interval_s === 'number', `the heartbeat's answer is ${shown(answer.body)} (PROTOCOL.md 6.4)`);
    },
  },
  {
    id: 'backend.completion',
    spec: '4.1 completion',
    title: "the plugin's running and result complete the job, and the client reads the result as posted",
    async run(context, scope) {
      const { jobId } = await completedJob(context, scope, await sharedStream(context, scope));
      const view = await readJob(context, scope, jobId);
      rule(view.state === 'completed', `the job is ${shown(view.state)} after its result, not completed`);
      rule(isDeepStrictEqual(view.result, LIVE_RESULT), `the client reads the result ${shown(view.result)}, not the one posted`);
    },
  },
  {
    id: 'backend.result-follows-schema',
    spec: '4.1 completion',
    title: 'a result that does not follow the job’s response_schema is refused, and the job stays open',
    async run(context, scope) {
      const stream = await sharedStream(context, scope);
      const jobId = await createJob(context, scope);
      await untilDelivered(context, stream, jobId);
      const wrong = await asPlugin(context, scope, `/jobs/${jobId}/result`, { result: { insights: 'not a list' } });
      rule(wrong.status >= 400 && wrong.status < 500, `a result that breaks the schema answered ${wrong.status}`);
      const view = await readJob(context, scope, jobId);
      rule(view.state !== 'completed' && view.state !== 'failed', `after a refused result the job is ${shown(view.state)}`);
    },
  },
  {
    id: 'backend.idempotent-result',
    spec: 'PROTOCOL.md 6.8',
    title: 'the same result posted again is answered as before; another result for the completed job is 409',
    async run(context, scope) {
      const { jobId } = await completedJob(context, scope, await sharedStream(context, scope));
      const again = await asPlugin(context, scope, `/jobs/${jobId}/result`, { result: LIVE_RESULT });
      rule(again.status >= 200 && again.status < 300, `the same result again answered ${again.status}`);
      const other = await asPlugin(context, scope, `/jobs/${jobId}/result`, { result: { insights: [] } });
      rule(other.status === 409, `another result for a completed job answered ${other.status}, not 409`);
    },
  },
  {
    id: 'backend.redelivery',
    spec: 'PROTOCOL.md 6e.1',
    title: 'a job delivered but not yet running is delivered again on a new stream whose Last-Event-ID is before its frame',
    async run(context, scope) {
      const first = await newJobStream(context, scope);
      const jobId = await createJob(context, scope);
      await untilDelivered(context, first, jobId);
      first.close();
      // A plugin that lost the frame with the stream resumes from before it: here, from nothing.
      const next = await newJobStream(context, scope);
      await untilDelivered(context, next, jobId);
    },
  },
  {
    id: 'backend.settled-not-redelivered',
    spec: 'PROTOCOL.md 6e.1',
    title: 'a job that completed is never delivered again, on a new stream with or without Last-Event-ID',
    async run(context, scope) {
      const first = await newJobStream(context, scope);
      const { jobId, delivered } = await completedJob(context, scope, first);
      first.close();
      for (const cursor of [delivered.frame.id, undefined]) {
        const next = await newJobStream(context, scope, cursor);
        // A job created now is delivered after whatever the new stream sends first.
        const marker = await createJob(context, scope);
        const { before } = await untilDelivered(context, next, marker);
        rule(
          !before.includes(jobId),
          `job ${jobId}, completed, was delivered again on a new stream (${cursor === undefined ? 'no' : 'with'} Last-Event-ID)`,
        );
        await asPlugin(context, scope, `/jobs/${marker}/result`, { result: LIVE_RESULT });
        next.close();
      }
    },
  },
  {
    id: 'backend.deadline',
    spec: '2.1 deadline_at',
    title: 'a job not answered by its deadline expires, and a result after it is refused 409',
    async run(context, scope) {
      const stream = await sharedStream(context, scope);
      const jobId = await createJob(context, scope, 1_000);
      await untilDelivered(context, stream, jobId);
      await pause(1_500, scope.signal);
      const late = await asPlugin(context, scope, `/jobs/${jobId}/result`, { result: LIVE_RESULT });
      rule(late.status === 409, `a result after the deadline answered ${late.status}, not 409`);
      const view = await readJob(context, scope, jobId);
      rule(view.state === 'expired', `past its deadline the job is ${shown(view.state)}, not expired`);
    },
  },
  {
    id: 'backend.follow',
    spec: 'PROTOCOL.md 6e.13',
    title: "a client following a job gets `: open`, then the job's view at each change, ids increasing, up to completed",
    async run(context, scope) {
      const stream = await sharedStream(context, scope);
      const jobId = await createJob(context, scope);
      const { response, stream: events } = await openStream(context, scope, `/jobs/${jobId}/events`, context.clientToken);
      rule(response.status === 200, `following the job answered ${response.status}`);
      await untilDelivered(context, stream, jobId);
      await asPlugin(context, scope, `/jobs/${jobId}/running`);
      await asPlugin(context, scope, `/jobs/${jobId}/result`, { result: LIVE_RESULT });
      rule(events.firstLine === ': open', `the follow stream's first line is ${shown(events.firstLine)}`);
      let last = 0;
      for (;;) {
        const frame = await events.nextFrame(context.replyMs, 'the completed view');
        const id = Number(frame.id);
        rule(Number.isInteger(id) && id > last, `a view's id is ${shown(frame.id)} after ${last}`);
        last = id;
        const view = dataObject(frame);
        rule(view.job_id === jobId, `a view of job ${shown(view.job_id)} on job ${jobId}'s stream`);
        if (view.state === 'completed') return;
      }
    },
  },
];
