/**
 * Where time and fresh ids come from. The engine passes them to the pure machines as data, and every
 * timer it arms goes through the clock (as XState's own does), so a test can drive time with a simulated
 * clock instead of waiting for it. Browser-safe (the client library runs on the same `Clock`): the ids come
 * from Web Crypto, which Node has too.
 */

/** What `setTimeout` returned; only ever given back to the same clock's `clearTimeout`. */
export type TimerHandle = unknown;

export interface Clock {
  now(): number;
  /** Calls `fn` once `ms` have passed. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; `undefined` or a timer that already fired is a no-op. */
  clearTimeout(handle: TimerHandle): void;
}

export interface IdSource {
  /** A short lowercase base-36 token for epochs and generations. */
  token(): string;
  /** A message id. */
  uuid(): string;
}

/** setTimeout's ceiling (~24.8 days): a longer wait fires early, and its owner re-arms from its deadline. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The system's time; a relay's timer never keeps its process alive on its own. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.min(MAX_TIMER_MS, Math.max(0, ms))).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
};

/**
 * Resolves `true` once `ms` have passed on `clock`, or `false` as soon as `signal` aborts (its timer then
 * cancelled, so nothing is left waiting on a closed owner).
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const aborted = () => {
      clock.clearTimeout(timer);
      resolve(false);
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', aborted);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', aborted, { once: true });
  });
}

export const randomIds: IdSource = {
  token: () => crypto.getRandomValues(new BigUint64Array(1))[0]!.toString(36),
  uuid: () => crypto.randomUUID(),
};
