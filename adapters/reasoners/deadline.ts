/**
 * A job's end as one signal: its `deadline_at`, or the plugin stopping (the request's own signal), whichever
 * comes first; and which of the two it was, for the failure's code. The reasoner arms its own timer at the
 * deadline rather than trust that the plugin's signal fires there.
 */
import { systemClock, type Clock } from '../../engine/core/clock.js';
import { ReasonerError, type ReasoningRequest } from './reasoner.js';

export interface JobEnd {
  /** Aborts at the deadline or when the plugin stops. */
  readonly signal: AbortSignal;
  /** Why the job ended early: `deadline_exceeded` at or past the deadline, else `interrupted`. */
  failure(): ReasonerError;
  /** Disarms the timer and the listener; call once the reasoner is done. */
  dispose(): void;
}

export function jobEnd(request: ReasoningRequest, clock: Clock = systemClock): JobEnd {
  const ended = new AbortController();
  const end = () => ended.abort();
  // Set by the timer itself: a timer may fire a hair before the wall clock reads the deadline.
  let expired = false;
  const timer = clock.setTimeout(() => {
    expired = true;
    end();
  }, request.deadline_at - clock.now());
  request.signal.addEventListener('abort', end, { once: true });
  if (request.signal.aborted || clock.now() >= request.deadline_at) end();
  return {
    signal: ended.signal,
    failure: () =>
      expired || clock.now() >= request.deadline_at
        ? new ReasonerError(
            'deadline_exceeded',
            `the job's deadline (${new Date(request.deadline_at).toISOString()}) passed before the reasoner answered`,
          )
        : new ReasonerError('interrupted', 'the reasoner was stopped before the job was done'),
    dispose() {
      clock.clearTimeout(timer);
      request.signal.removeEventListener('abort', end);
    },
  };
}
