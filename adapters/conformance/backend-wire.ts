/**
 * How the backend relay checks speak to a backend (spec 4.1; PROTOCOL.md 6, 6e): the kit is both sides
 * of one integration, its plugin (the RELAY_TOKEN: the job stream, heartbeats, `running`, results) and
 * its client (the client token: jobs created, read and followed). The integration must have no other
 * plugin connected while the kit runs: the kit's stream would take it over.
 */
import { randomUUID } from 'node:crypto';
import { parseRetryAfter } from '../../protocol/retry-after.js';
import { pause } from './arrivals.js';
import { RuleBroken, rule, shown, type CheckScope } from './check.js';
import type { Target } from './target.js';
import { WireStream, dataObject, type WireFrame } from './wire-stream.js';

export interface BackendRelayContext {
  readonly target: Target;
  readonly integrationId: string;
  readonly relayToken: string;
  readonly clientToken: string;
  readonly replyMs: number;
  /** The job stream the checks share (`sharedStream`), closed when the run ends. */
  readonly shared: { stream?: WireStream; closed?: boolean };
}

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
 * A stream of the integration (the plugin's job stream, or a job's events for the client). With a
 * `scope`, open until the check ends or `close`; without one (the shared stream), until `close` only,
 * `signal` ending only the wait for its answer.
 */
export async function openStream(
  context: BackendRelayContext,
  scope: CheckScope | undefined,
  path: string,
  token: string,
  lastEventId?: string,
  signal: AbortSignal | undefined = scope?.signal,
): Promise<{ response: Response; stream: WireStream }> {
  if (signal?.aborted) throw new RuleBroken("the check's time was up");
  const controller = new AbortController();
  const abort = () => controller.abort();
  signal?.addEventListener('abort', abort, { once: true });
  scope?.defer(abort);
  try {
    const response = await context.target.fetch(integrationPath(context, path), {
      headers: {
        accept: 'text/event-stream',
        ...(token === '' ? {} : { authorization: `Bearer ${token}` }),
        ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }),
      },
      signal: controller.signal,
      stream: true,
    });
    return { response, stream: new WireStream(response, controller) };
  } finally {
    if (scope === undefined) signal?.removeEventListener('abort', abort);
  }
}

/** Opens of a job stream answered 429 that the kit waits out before it gives up. */
const MAX_STREAM_TRIES = 3;

/**
 * A job stream answered 200; a `RuleBroken` otherwise. An integration opens only so many a minute
 * (PROTOCOL.md 6e.24): a 429 is waited out as its `Retry-After` says (1 s without one), twice at most.
 */
export async function newJobStream(
  context: BackendRelayContext,
  scope: CheckScope | undefined,
  lastEventId?: string,
  signal: AbortSignal | undefined = scope?.signal,
): Promise<WireStream> {
  for (let tries = 1; ; tries += 1) {
    const { response, stream } = await openStream(context, scope, '/stream', context.relayToken, lastEventId, signal);
    if (response.status === 200) return stream;
    stream.close();
    const wait = parseRetryAfter(response.headers.get('retry-after') ?? undefined, Date.now()) ?? 1_000;
    rule(response.status === 429 && tries < MAX_STREAM_TRIES && wait <= 60_000, `the job stream answered ${response.status}, not 200`);
    await pause(wait, signal);
  }
}

/** The job stream the checks share, opened again when a check's own stream took over from it; none once the run closed it. */
export async function sharedStream(context: BackendRelayContext, scope: CheckScope): Promise<WireStream> {
  const { shared } = context;
  if (shared.stream !== undefined && shared.stream.end === undefined) return shared.stream;
  const stream = await newJobStream(context, undefined, undefined, scope.signal);
  if (shared.closed) {
    stream.close();
    throw new RuleBroken('the run ended');
  }
  shared.stream = stream;
  return stream;
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
    const job = dataObject(frame);
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
