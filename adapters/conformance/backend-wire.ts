/**
 * How the backend relay checks speak to a backend (spec 4.1; PROTOCOL.md 6, 6e): the kit is both sides
 * of one integration, its plugin (the RELAY_TOKEN: the job stream, heartbeats, `running`, results) and
 * its client (the client token: jobs created, read and followed). The integration must have no other
 * plugin connected while the kit runs: the kit's stream would take it over.
 */
import { randomUUID } from 'node:crypto';
import { RuleBroken, rule, shown, type CheckScope } from './check.js';
import type { Target } from './target.js';
import { WireStream, type StreamItem } from './wire-stream.js';

export interface BackendRelayContext {
  readonly target: Target;
  readonly integrationId: string;
  readonly relayToken: string;
  readonly clientToken: string;
  readonly replyMs: number;
  /** The job stream the checks share (`sharedStream`), closed when the run ends. */
  readonly shared: { stream?: WireStream };
}

type WireFrame = Extract<StreamItem, { kind: 'frame' }>;

/** A plain live analysis: the purpose every backend takes (PROTOCOL.md 6.3). */
export const LIVE_ANALYSIS = { session_id: 'conformance', transcript: [{ speaker: 'Ana', text: 'What is the budget?' }] } as const;
/** A result that follows the live analysis's schema. */
export const LIVE_RESULT = { insights: [{ text: 'Ana asked about the budget.', kind: 'question', confidence: 0.9 }] } as const;

const integrationPath = (context: BackendRelayContext, path: string) => `/api/v1/assistant/integrations/${context.integrationId}${path}`;

/** The plugin's side: a request with the RELAY_TOKEN. */
export function asPlugin(context: BackendRelayContext, scope: CheckScope, path: string, body?: unknown) {
  return context.target.json(integrationPath(context, path), {
    headers: { authorization: `Bearer ${context.relayToken}` },
    ...(body === undefined ? { method: 'POST', body: '{}' } : { body }),
    signal: scope.signal,
  });
}

/** The client's side: a request with the client token (`body` undefined: a GET). */
export function asClient(context: BackendRelayContext, scope: CheckScope, path: string, body?: unknown) {
  return context.target.json(integrationPath(context, path), {
    headers: { authorization: `Bearer ${context.clientToken}` },
    ...(body === undefined ? {} : { body }),
    signal: scope.signal,
  });
}

/**
 * A stream of the integration (the plugin's job stream, or a job's events for the client), open until the
 * check ends or `close`; with no `scope`, until `close` only.
 */
export async function openStream(
  context: BackendRelayContext,
  scope: CheckScope | undefined,
  path: string,
  token: string,
  lastEventId?: string,
): Promise<{ response: Response; stream: WireStream }> {
  const controller = new AbortController();
  scope?.signal.addEventListener('abort', () => controller.abort(), { once: true });
  scope?.defer(() => controller.abort());
  const response = await context.target.fetch(integrationPath(context, path), {
    headers: {
      accept: 'text/event-stream',
      authorization: `Bearer ${token}`,
      ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }),
    },
    signal: controller.signal,
    stream: true,
  });
  return { response, stream: new WireStream(response, controller) };
}

/**
 * A job stream of the check's own (to drop, or to resume from a cursor), answered 200; a `RuleBroken`
 * otherwise. An integration opens only so many a minute (PROTOCOL.md 6e.24): a 429 is waited out, as
 * its `Retry-After` says, while the check has time.
 */
export async function newJobStream(context: BackendRelayContext, scope: CheckScope | undefined, lastEventId?: string): Promise<WireStream> {
  for (;;) {
    const { response, stream } = await openStream(context, scope, '/stream', context.relayToken, lastEventId);
    if (response.status === 200) return stream;
    const text = await response.text().catch(() => '');
    const wait = Number(response.headers.get('retry-after'));
    rule(
      response.status === 429 && Number.isFinite(wait) && wait <= 60,
      `the job stream answered ${response.status}, not 200: ${shown(text)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
  }
}

/** The job stream the checks share, opened again when a check's own stream took over from it. */
export async function sharedStream(context: BackendRelayContext): Promise<WireStream> {
  if (context.shared.stream === undefined || context.shared.stream.end !== undefined)
    context.shared.stream = await newJobStream(context, undefined);
  return context.shared.stream;
}

/** Creates a plain live analysis as the client (`deadline_ms` when given): its job_id; a `RuleBroken` unless it is created. */
export async function createJob(context: BackendRelayContext, scope: CheckScope, deadline_ms?: number): Promise<string> {
  const job_id = randomUUID();
  const created = await asClient(context, scope, '/jobs', {
    job_id,
    purpose: 'live_analysis',
    payload: LIVE_ANALYSIS,
    ...(deadline_ms === undefined ? {} : { deadline_ms }),
  });
  rule(created.status === 201, `creating a job answered ${created.status}, not 201: ${shown(created.text)}`);
  return job_id;
}

/** A job frame's ReasoningJob. */
export function jobOf(frame: WireFrame): Record<string, unknown> {
  let job: unknown;
  try {
    job = JSON.parse(frame.data.join('\n'));
  } catch {
    throw new RuleBroken(`a job frame's data is not JSON: ${shown(frame.data.join('\n'))}`);
  }
  rule(typeof job === 'object' && job !== null, `a job frame's data is not an object: ${shown(job)}`);
  return job as Record<string, unknown>;
}

/** Frames of the job stream until `jobId`'s delivery: that frame, and every job id delivered before it. */
export async function untilDelivered(
  context: BackendRelayContext,
  stream: WireStream,
  jobId: string,
): Promise<{ frame: WireFrame; job: Record<string, unknown>; before: string[] }> {
  const before: string[] = [];
  const deadline = performance.now() + context.replyMs;
  for (;;) {
    const frame = await stream.nextFrame(Math.max(0, deadline - performance.now()), `the delivery of job ${jobId}`);
    // Other events of the stream (a key rotation's, PROTOCOL.md 7.12) name an event; a job frame does not.
    if (frame.event !== undefined) continue;
    const job = jobOf(frame);
    if (job.job_id === jobId) return { frame, job, before };
    before.push(String(job.job_id));
  }
}

/** The client's view of a job. */
export async function readJob(context: BackendRelayContext, scope: CheckScope, jobId: string): Promise<Record<string, unknown>> {
  const read = await asClient(context, scope, `/jobs/${jobId}`);
  rule(read.status === 200, `reading job ${jobId} answered ${read.status}`);
  return read.body as Record<string, unknown>;
}

/** A job created, delivered, marked running and completed with LIVE_RESULT: its id and its delivery frame. */
export async function completedJob(context: BackendRelayContext, scope: CheckScope, stream: WireStream) {
  const jobId = await createJob(context, scope);
  const delivered = await untilDelivered(context, stream, jobId);
  const running = await asPlugin(context, scope, `/jobs/${jobId}/running`);
  rule(running.status >= 200 && running.status < 300, `running answered ${running.status}: ${shown(running.text)}`);
  const result = await asPlugin(context, scope, `/jobs/${jobId}/result`, { result: LIVE_RESULT });
  rule(result.status >= 200 && result.status < 300, `a result that follows the schema answered ${result.status}: ${shown(result.text)}`);
  return { jobId, delivered };
}
