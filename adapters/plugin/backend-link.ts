/**
 * The backend's plugin-side endpoints (PROTOCOL.md 6d): the integration's job stream, heartbeats, and a
 * job's `running` and `result` POSTs, all with the RELAY_TOKEN as a Bearer credential. Every request goes
 * to the configured backend URL and nowhere else; an answer is reported as it came (status, JSON body,
 * `Retry-After`) and judged by the caller, a failure to get one as `unreachable`.
 */
import { Agent, request, type Dispatcher } from 'undici';
import type { Clock } from '../../engine/core/clock.js';
import { parseRetryAfter, type Heartbeat, type JobResultBody, type RekeyAnswer } from '../../protocol/index.js';

export interface BackendOptions {
  /** The backend's base URL; the API paths go below it. */
  readonly url: string;
  readonly integrationId: string;
  readonly relayToken: string;
  /** Reads `Retry-After` dates. */
  readonly clock: Clock;
  /** undici's dispatcher for every request; a private `Agent` by default. */
  readonly dispatcher?: Dispatcher;
}

export type Answer =
  | { readonly kind: 'answered'; readonly status: number; readonly body: unknown; readonly retryAfterMs?: number }
  | { readonly kind: 'unreachable'; readonly error: unknown };

export type StreamAnswer = { readonly kind: 'open'; readonly body: AsyncIterable<string> } | Answer;

/** A JSON answer is small; a larger one is not read to its end. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** A POST's answer, or the stream's headers, must come within this. */
const ANSWER_TIMEOUT_MS = 10_000;
/** No byte on the stream for this long (three keep-alives missed) means the connection is gone. */
const STREAM_IDLE_MS = 60_000;

export class BackendLink {
  private readonly base: string;
  private readonly dispatcher: Dispatcher;
  private readonly ownDispatcher: boolean;

  constructor(private readonly options: BackendOptions) {
    if (!URL.canParse(options.url) || !/^https?:$/.test(new URL(options.url).protocol))
      throw new TypeError(`the backend URL must be an http or https URL: ${options.url}`);
    if (options.integrationId.length === 0) throw new TypeError('the integration id must not be empty');
    this.base = `${options.url.replace(/\/+$/, '')}/api/v1/assistant/integrations/${encodeURIComponent(options.integrationId)}`;
    this.ownDispatcher = options.dispatcher === undefined;
    this.dispatcher = options.dispatcher ?? new Agent();
  }

  /** `GET …/stream`: the open stream's text, or the answer that refused it. */
  async stream(lastEventId: string | undefined, signal: AbortSignal): Promise<StreamAnswer> {
    try {
      const response = await request(`${this.base}/stream`, {
        dispatcher: this.dispatcher,
        headers: { ...this.headers(), accept: 'text/event-stream', ...(lastEventId !== undefined ? { 'last-event-id': lastEventId } : {}) },
        headersTimeout: ANSWER_TIMEOUT_MS,
        bodyTimeout: STREAM_IDLE_MS,
        signal,
      });
      if (response.statusCode !== 200) return await this.answer(response);
      return { kind: 'open', body: decoded(response.body) };
    } catch (error) {
      return { kind: 'unreachable', error };
    }
  }

  heartbeat(body: Heartbeat, signal?: AbortSignal): Promise<Answer> {
    return this.post('/heartbeat', body, signal);
  }

  /** Tells the backend the plugin runs the job. */
  running(jobId: string, signal?: AbortSignal): Promise<Answer> {
    return this.post(`/jobs/${encodeURIComponent(jobId)}/running`, undefined, signal);
  }

  result(jobId: string, body: JobResultBody, signal?: AbortSignal): Promise<Answer> {
    return this.post(`/jobs/${encodeURIComponent(jobId)}/result`, body, signal);
  }

  /** Answers a key rotation (PROTOCOL.md 7.12). */
  rekey(rekeyId: string, body: RekeyAnswer, signal?: AbortSignal): Promise<Answer> {
    return this.post(`/rekeys/${encodeURIComponent(rekeyId)}`, body, signal);
  }

  async close(): Promise<void> {
    if (this.ownDispatcher) await this.dispatcher.close();
  }

  private headers(): Record<string, string> {
    return { authorization: `Bearer ${this.options.relayToken}`, 'user-agent': 'assistant-relay-plugin' };
  }

  private async post(path: string, body: unknown, signal: AbortSignal | undefined): Promise<Answer> {
    try {
      const response = await request(`${this.base}${path}`, {
        method: 'POST',
        dispatcher: this.dispatcher,
        headers: { ...this.headers(), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        headersTimeout: ANSWER_TIMEOUT_MS,
        bodyTimeout: ANSWER_TIMEOUT_MS,
        ...(signal !== undefined ? { signal } : {}),
      });
      return await this.answer(response);
    } catch (error) {
      return { kind: 'unreachable', error };
    }
  }

  private async answer(response: Dispatcher.ResponseData): Promise<Answer> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES) {
        response.body.destroy();
        break;
      }
      chunks.push(chunk);
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      body = undefined;
    }
    const retryAfterMs = parseRetryAfter(response.headers['retry-after'], this.options.clock.now());
    return { kind: 'answered', status: response.statusCode, body, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  }
}

/** The stream's text as it arrives; a character split across chunks is decoded whole. */
async function* decoded(body: AsyncIterable<Uint8Array>): AsyncIterable<string> {
  const decoder = new TextDecoder();
  for await (const chunk of body) yield decoder.decode(chunk, { stream: true });
}

/** The `code` of an answer's `{error: {code}}` body, if it has one. */
export function errorCodeOf(body: unknown): string | undefined {
  const error = (body as { error?: { code?: unknown } } | undefined)?.error;
  return typeof error?.code === 'string' ? error.code : undefined;
}

/** Worth trying again: the backend is overloaded, restarting or unreachable, not refusing. */
export function isTransient(answer: Answer): boolean {
  return answer.kind === 'unreachable' || answer.status === 408 || answer.status === 429 || answer.status >= 500;
}
