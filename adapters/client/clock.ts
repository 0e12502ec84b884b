/**
 * The client library's time. Every timer, backoff wait, deadline and "now" of the client goes through a
 * `Clock`, the engine's own interface, so that a test drives it with a simulated clock instead of
 * sleeping. Browser-safe.
 */
import { MAX_TIMER_MS, type Clock } from '../../engine/core/clock.js';

// Named here for client.ts, which may import the client library but not the engine.
export type { Clock };

/**
 * The system's time, the client's default. Unlike the relay's, its timers keep a Node process alive: a
 * backoff wait stands between a script and the reply it awaits (a browser has no such question).
 */
export const clientClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.min(MAX_TIMER_MS, Math.max(0, ms))),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout> | undefined),
};
