/**
 * Reconnect waits: exponential backoff with full jitter (a uniformly random wait between 0 and the
 * doubled ceiling), so that many plugins or clients dropped at once by a restart do not come back in
 * step. Browser-safe.
 */
export const BACKOFF = {
  /** The first ceiling; it doubles with each failure in a row. */
  baseMs: 250,
  /** The ceiling stops doubling here. */
  capMs: 30_000,
} as const;

/** The wait before attempt `failures + 1`, after `failures` failures in a row (1 or more). */
export function fullJitter(
  failures: number,
  random: () => number,
  bounds: { readonly baseMs: number; readonly capMs: number } = BACKOFF,
): number {
  const ceiling = Math.min(bounds.capMs, bounds.baseMs * 2 ** Math.min(failures - 1, 30));
  return Math.floor(random() * ceiling);
}
