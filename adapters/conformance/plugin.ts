/**
 * The plugin's checks (spec 4.1, 1.3, 1.4, 2.1, 2.4; PROTOCOL.md 6d where the spec is silent), the kit
 * playing its backend (kit-backend.ts): the stream and heartbeats with the RELAY_TOKEN, a job run and
 * its result following the job's schema, a capability probe, a job delivered again after a dropped
 * stream or after it finished (run once), and a job past its deadline (never started).
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { pause } from './arrivals.js';
import { RuleBroken, rule, shown, type Check } from './check.js';
import type { KitBackend, PluginRequest } from './kit-backend.js';
import { open, seal, type Direction, type EnvelopeBinding } from '../../protocol/byo/index.js';
import { purposeResultSchema } from '../../protocol/purpose-schemas.js';
import { CapabilityProfile, Heartbeat, type JobPurpose } from '../../protocol/reasoning.js';
import { resultProblems } from '../../protocol/response-schema.js';

export interface PluginContext {
  readonly backend: KitBackend;
  /** The provider the plugin serves: every job names it. */
  readonly providerKind: string;
  readonly replyMs: number;
}

/** How long the kit watches for what a plugin must not do (start a job again, or one past its deadline). */
const WATCH_MS = 1_500;

const PAYLOADS: Record<JobPurpose, Record<string, unknown>> = {
  live_analysis: { session_id: 'conformance', transcript: [{ speaker: 'Ana', text: 'We decided to start in March. What is the budget?' }] },
  session_summary: { session_id: 'conformance', transcript: [{ speaker: 'Ana', text: 'We agreed on a pilot.' }] },
  capability_probe: {},
};

type Job = ReturnType<typeof plainJob>;

/** A plain ReasoningJob envelope (spec 2.1) of `purpose`, due in 30 s unless `deadline_at` says otherwise. */
function plainJob(context: PluginContext, purpose: JobPurpose, deadline_at = new Date(Date.now() + 30_000).toISOString()) {
  return {
    event_type: 'reasoning_job',
    job_id: randomUUID(),
    purpose,
    deadline_at,
    schema_version: 1,
    envelope_version: 1,
    response_schema: purposeResultSchema(purpose) as Record<string, unknown>,
    payload: PAYLOADS[purpose] as unknown,
    provider_kind: context.providerKind,
    byo: false,
  };
}

/** What a job's envelopes are bound to (PROTOCOL.md 7.3), as the kit, its client, created it. */
function bindingOf(context: PluginContext, job: Job, direction: Direction): EnvelopeBinding {
  const { job_id, purpose, deadline_at, response_schema, schema_version, envelope_version } = job;
  return {
    direction,
    integration_id: context.backend.integrationId,
    job_id,
    purpose,
    deadline_at,
    response_schema,
    schema_version,
    envelope_version,
  };
}

/** A job as the plugin under test must take it: sealed (BYO, spec 2.2) when it is paired, else plain. */
function envelope(context: PluginContext, purpose: JobPurpose, deadline_at?: string): Job {
  const job = plainJob(context, purpose, deadline_at);
  const keyring = context.backend.pairing?.keyring;
  if (keyring === undefined) return job;
  return { ...job, byo: true, payload: seal(keyring.current, bindingOf(context, job, 'client_to_assistant'), job.payload) };
}

/** A posted result as the client reads it: opened under the pairing's keys for this job when it is sealed; a `RuleBroken` if it does not open. */
function readResult(context: PluginContext, job: Job, result: unknown): unknown {
  const keyring = context.backend.pairing?.keyring;
  if (!job.byo || keyring === undefined) return result;
  try {
    return open((kid) => keyring.keyOf(kid), bindingOf(context, job, 'assistant_to_client'), result);
  } catch (error) {
    throw new RuleBroken(`a BYO job's result does not open for the job under the pairing's keys: ${(error as Error).message}`);
  }
}

const of = (kind: PluginRequest['kind'], jobId: string) => (requests: readonly PluginRequest[]) =>
  requests.filter((request) => request.kind === kind && request.job_id === jobId);

/** Waits for the plugin's job stream to be open (it may be reconnecting after the last check). */
async function streaming(context: PluginContext): Promise<void> {
  await context.backend.until(() => context.backend.streaming, context.replyMs, 'job stream open');
}

/** The result the plugin posted for `jobId` once it has: its body. */
async function resultOf(context: PluginContext, jobId: string): Promise<{ result?: unknown; error?: { code?: unknown } }> {
  const [posted] = of(
    'result',
    jobId,
  )(await context.backend.until((r) => of('result', jobId)(r).length > 0, context.replyMs, `result for job ${jobId}`));
  return posted!.body as { result?: unknown; error?: { code?: unknown } };
}

/** Whether the plugin did not start `jobId` within the watch, and answered it, if at all, with a failure. */
async function notStarted(context: PluginContext, signal: AbortSignal, jobId: string, why: string): Promise<void> {
  await pause(WATCH_MS, signal);
  rule(of('running', jobId)(context.backend.requests).length === 0, `${why}, yet it was said running: it was started`);
  for (const posted of of('result', jobId)(context.backend.requests))
    rule((posted.body as { result?: unknown }).result === undefined, `${why}, yet it was answered with a result: ${shown(posted.body)}`);
}

export const PLUGIN_CHECKS: readonly Check<PluginContext>[] = [
  {
    id: 'plugin.pairs',
    spec: 'PROTOCOL.md 7.6',
    title: 'the plugin pairs by the code: commit, then reveal, then its confirmation, all checking against the client’s',
    needs: ['byo'],
    async run(context) {
      const pairing = context.backend.pairing;
      rule(pairing !== undefined, 'no pairing was made');
      await context.backend.until(
        () => pairing.keyring !== undefined || pairing.failed !== undefined,
        context.replyMs * 3,
        'pairing completed',
      );
      rule(pairing.keyring !== undefined, `the pairing failed: ${pairing.failed}`);
    },
  },
  {
    id: 'plugin.stream',
    spec: '5',
    title: 'the plugin holds its job stream with the RELAY_TOKEN as Bearer',
    async run(context) {
      await streaming(context);
      const streams = context.backend.requests.filter((request) => request.kind === 'stream');
      for (const stream of streams)
        rule(
          stream.authorization === `Bearer ${context.backend.relayToken}`,
          `a stream was asked for with Authorization ${shown(stream.authorization)}`,
        );
    },
  },
  {
    id: 'plugin.heartbeat',
    spec: 'PROTOCOL.md 6d.14',
    title: 'the plugin sends heartbeats with the RELAY_TOKEN, each a heartbeat update (PROTOCOL.md 6.4)',
    async run(context) {
      const requests = await context.backend.until((r) => r.some((request) => request.kind === 'heartbeat'), context.replyMs, 'heartbeat');
      const heartbeat = requests.find((request) => request.kind === 'heartbeat')!;
      rule(heartbeat.refused !== true, `a heartbeat came with Authorization ${shown(heartbeat.authorization)}, not the RELAY_TOKEN`);
      const parsed = Heartbeat.safeParse(heartbeat.body);
      rule(parsed.success, `a heartbeat's body is not a heartbeat update: ${shown(heartbeat.body)}`);
    },
  },
  {
    id: 'plugin.completes',
    spec: 'PROTOCOL.md 6d.7',
    title: 'a job delivered on the stream is said running, then answered with a result that follows its response_schema',
    async run(context) {
      await streaming(context);
      const job = envelope(context, 'live_analysis');
      context.backend.deliver(job);
      const posted = await resultOf(context, job.job_id);
      rule(
        of('running', job.job_id)(context.backend.requests).length === 1,
        `the job was said running ${of('running', job.job_id)(context.backend.requests).length} times before its result, not once`,
      );
      rule(posted.result !== undefined, `the plugin posted ${shown(posted)}, not a result`);
      const problem = resultProblems(job.response_schema, readResult(context, job, posted.result));
      rule(problem === undefined, `the result does not follow the job's response_schema: ${problem}`);
    },
  },
  {
    id: 'plugin.capability-probe',
    spec: '2.4',
    title: 'a capability_probe job is answered with a capability profile (PROTOCOL.md 6.5)',
    async run(context) {
      await streaming(context);
      const job = envelope(context, 'capability_probe');
      context.backend.deliver(job);
      const posted = await resultOf(context, job.job_id);
      const profile = readResult(context, job, posted.result);
      rule(CapabilityProfile.safeParse(profile).success, `the probe's result is not a capability profile: ${shown(profile)}`);
    },
  },
  {
    id: 'plugin.redelivered-after-drop',
    spec: 'PROTOCOL.md 6d.3',
    title: 'after its stream drops the plugin comes back, takes the job sent again, and answers it once',
    async run(context, scope) {
      await streaming(context);
      const opened = context.backend.requests.filter((request) => request.kind === 'stream').length;
      const job = envelope(context, 'live_analysis');
      context.backend.deliver(job);
      context.backend.cut();
      await context.backend.until(
        (r) => r.filter((request) => request.kind === 'stream').length > opened && context.backend.streaming,
        context.replyMs,
        'stream opened again',
      );
      context.backend.deliver(job);
      const first = await resultOf(context, job.job_id);
      await pause(WATCH_MS, scope.signal);
      const results = of('result', job.job_id)(context.backend.requests);
      rule(
        results.every((posted) => isDeepStrictEqual(posted.body, first)),
        `the job was answered ${results.length} times, not all alike: ${shown(results.map((r) => r.body))}`,
      );
      rule(of('running', job.job_id)(context.backend.requests).length <= 1, 'the job was started twice');
    },
  },
  {
    id: 'plugin.runs-once',
    spec: 'PROTOCOL.md 6d.3',
    title: 'a finished job delivered again is not run again: no second running, no other result',
    async run(context, scope) {
      await streaming(context);
      const job = envelope(context, 'live_analysis');
      context.backend.deliver(job);
      const first = await resultOf(context, job.job_id);
      context.backend.deliver(job);
      await pause(WATCH_MS, scope.signal);
      const running = of('running', job.job_id)(context.backend.requests);
      rule(running.length === 1, `the finished job was said running ${running.length} times: it ran again`);
      const results = of('result', job.job_id)(context.backend.requests);
      rule(
        results.every((posted) => isDeepStrictEqual(posted.body, first)),
        `a second, other result was posted: ${shown(results.at(-1)?.body)}`,
      );
    },
  },
  {
    id: 'plugin.past-deadline',
    spec: '2.1 deadline_at',
    title: 'a job delivered past its deadline_at is never started; if answered, it is failed, not a result',
    async run(context, scope) {
      await streaming(context);
      const job = envelope(context, 'live_analysis', new Date(Date.now() - 5_000).toISOString());
      context.backend.deliver(job);
      await notStarted(context, scope.signal, job.job_id, 'the job came past its deadline');
    },
  },
  {
    id: 'plugin.byo-bound',
    spec: 'PROTOCOL.md 7.3',
    title: 'a BYO job whose envelope was sealed for other job fields (another deadline) is never run',
    needs: ['byo'],
    async run(context, scope) {
      await streaming(context);
      const job = envelope(context, 'live_analysis');
      // Rewritten on the way, as a lying backend would: the envelope binds the deadline it was sealed with.
      context.backend.deliver({ ...job, deadline_at: new Date(Date.parse(job.deadline_at) + 60_000).toISOString() });
      await notStarted(context, scope.signal, job.job_id, 'the job came with a deadline its envelope was not sealed for');
    },
  },
  {
    id: 'plugin.byo-only',
    spec: 'PROTOCOL.md 7.13',
    title: 'a paired plugin never runs a plain job (only a backend that makes jobs up sends one)',
    needs: ['byo'],
    async run(context, scope) {
      await streaming(context);
      const job = plainJob(context, 'live_analysis');
      context.backend.deliver(job);
      await notStarted(context, scope.signal, job.job_id, 'the job came plain to a paired plugin');
    },
  },
];
