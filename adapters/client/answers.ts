/** Reading a server's answer on the client's side: a body that may not be JSON, and its `Retry-After`. Browser-safe. */
import { parseRetryAfter } from '../../protocol/retry-after.js';
import type { Clock } from './clock.js';

export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** How long the answer asks to wait before trying again, in ms from `clock`'s now, if it says. */
export function retryAfterMs(response: Response, clock: Clock): number | undefined {
  return parseRetryAfter(response.headers.get('retry-after') ?? undefined, clock.now());
}
