/**
 * The port callback delivery goes out through (4.3). The engine decides what to POST, when, and what an
 * answer means (machines/delivery.ts); a transport only makes one attempt and reports what happened,
 * without judging it. The HTTP transport (adapters/callback) also checks the URL again at connect time,
 * so an attempt can be refused before any socket opens.
 */
import type { CallbackOutcome } from '../../machines/chat/delivery.js';

export type { CallbackOutcome };

export interface CallbackRequest {
  /** The advertised `callback.url`; the POST goes to `{url}/tasks/{task_id}`. */
  readonly url: string;
  /** Sent as `Authorization: Bearer {token}`; never logged. */
  readonly token: string;
  /** The path's correlation handle (4.3 rule 3). */
  readonly task_id: string;
  /** The reply body (2.5) as compact JSON. */
  readonly body: string;
  /** Aborted when the host closes: the attempt ends unanswered and is made again on the next start. */
  readonly signal: AbortSignal;
}

export interface CallbackTransport {
  post(request: CallbackRequest): Promise<CallbackOutcome>;
}

/**
 * An error's `code` when it is an identifier (ECONNREFUSED, UND_ERR_SOCKET...), else `UNKNOWN`. Only the
 * code is ever reported: a message could quote a URL or a header, and so a credential.
 */
export function failureCode(error: unknown): string {
  const code = typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]{0,63}$/.test(code) ? code : 'UNKNOWN';
}
