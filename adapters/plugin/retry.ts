/**
 * A job's POSTs (`running`, `result`) are tried again while the backend is unreachable or overloaded
 * (5xx, 408, 429, a network error), with full-jitter backoff or the `Retry-After` the backend asked for,
 * until the job's deadline: past it the backend settles the job itself, so trying on would be pointless.
 * The first attempt is always made, however late.
 */
import { sleep, type Clock } from '../../engine/core/clock.js';
import { isTransient, type Answer } from './backend-link.js';
import { fullJitter } from '../../protocol/backoff.js';

export type Final =
  | { readonly kind: 'answered'; readonly status: number; readonly body: unknown }
  | { readonly kind: 'gave_up' }
  | { readonly kind: 'stopped' };

export interface RetryContext {
  readonly clock: Clock;
  readonly random: () => number;
  /** Aborted when the plugin stops: the wait ends, and the job's POST is owed to the next start. */
  readonly stop: AbortSignal;
}

export async function untilAnswered(attempt: () => Promise<Answer>, deadline_at: number, context: RetryContext): Promise<Final> {
  const { clock, random, stop } = context;
  for (let failures = 1; ; failures += 1) {
    if (stop.aborted) return { kind: 'stopped' };
    const answer = await attempt();
    if (answer.kind === 'answered' && !isTransient(answer)) return answer;
    const wait = (answer.kind === 'answered' ? answer.retryAfterMs : undefined) ?? fullJitter(failures, random);
    if (clock.now() + wait >= deadline_at) return { kind: 'gave_up' };
    if (!(await sleep(clock, wait, stop))) return { kind: 'stopped' };
  }
}
