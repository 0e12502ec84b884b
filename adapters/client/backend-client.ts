/**
 * Calls to the backend relay from a client's side (an app, the terminal commands, a pairing side):
 * fetch-based and browser-safe. A 2xx answer is parsed with its zod schema; anything else is a
 * `BackendError` that carries the status and the backend's error code, so a caller can act on which.
 */
import type { z } from 'zod';
import { SseParser, textChunks, type SseEvent } from '../../protocol/sse-parser.js';
import { retryAfterMs } from './answers.js';
import { clientClock, type Clock } from './clock.js';

export class BackendError extends Error {
  constructor(
    readonly status: number,
    /** The backend's `error.code`, when it answered with one. */
    readonly code: string | undefined,
    message: string,
    /** When a refusal for load (429) may be tried again, in ms from its answer, if it said (`Retry-After`). */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export class BackendClient {
  constructor(
    /** Every path is below this URL. */
    private readonly base: string,
    /** Sent as `Authorization: Bearer`, when there is one. */
    private readonly token?: string,
    /** Where time comes from for whoever calls through this client: its waits, deadlines and `Retry-After`s. */
    readonly clock: Clock = clientClock,
  ) {}

  /** The same backend with another base below it, or another token. */
  at(path: string, token: string | undefined = this.token): BackendClient {
    return new BackendClient(`${this.base}${path}`, token, this.clock);
  }

  /** `path` below the base; a 2xx answer parsed with `schema`, anything else a `BackendError`. */
  async call<T>(schema: z.ZodType<T>, path: string, init: { method: 'GET' | 'POST'; body?: unknown }): Promise<T> {
    const response = await fetch(`${this.base}${path}`, {
      method: init.method,
      headers: { ...this.authorization(), ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    if (!response.ok) throw await answerError(response, this.clock);
    return schema.parse(JSON.parse(await response.text()));
  }

  /** An SSE stream below the base, its events as they arrive, resumed after `cursor` if given; ends when the backend ends it. */
  async *events(path: string, cursor: string | undefined): AsyncGenerator<SseEvent> {
    const response = await fetch(`${this.base}${path}`, {
      headers: { ...this.authorization(), accept: 'text/event-stream', ...(cursor === undefined ? {} : { 'last-event-id': cursor }) },
    });
    if (!response.ok || response.body === null) throw await answerError(response, this.clock);
    const parser = new SseParser();
    for await (const chunk of textChunks(response.body)) yield* parser.feed(chunk);
  }

  private authorization(): Record<string, string> {
    return this.token === undefined ? {} : { authorization: `Bearer ${this.token}` };
  }
}

/** A backend's answer that was not a success, as an error that says what it was. */
async function answerError(response: Response, clock: Clock): Promise<BackendError> {
  let error: { code?: string; message?: string } | undefined;
  try {
    error = (JSON.parse(await response.text()) as { error?: typeof error } | undefined)?.error;
  } catch {
    // Not our error body: the status says enough.
  }
  const wait = retryAfterMs(response, clock);
  const retry = wait === undefined ? '' : ` (try again in ${Math.ceil(wait / 1000)} s)`;
  const said = error ? ` ${error.code}: ${error.message}` : '';
  return new BackendError(response.status, error?.code, `the backend answered ${response.status}${said}${retry}`, wait);
}
