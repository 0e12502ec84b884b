/**
 * A bounded, persistent, append-only sequence: the newest `max` items of everything pushed. Snapshots
 * share one backing array and each reads only its own [start, end) range, so pushing onto the newest
 * snapshot is O(1) and never changes what an older snapshot reads; pushing onto an older one copies.
 * Keeps the fold pure without copying a 1,024-entry ledger on every event.
 */
export interface Window<T> {
  readonly items: readonly T[];
  readonly start: number;
  readonly end: number;
}

const EMPTY: Window<never> = { items: [], start: 0, end: 0 };

export function emptyWindow<T>(): Window<T> {
  return EMPTY;
}

export function windowSize<T>(w: Window<T>): number {
  return w.end - w.start;
}

export function windowToArray<T>(w: Window<T>): T[] {
  return w.items.slice(w.start, w.end);
}

export function oldest<T>(w: Window<T>): T | undefined {
  return w.end > w.start ? w.items[w.start] : undefined;
}

export function newest<T>(w: Window<T>): T | undefined {
  return w.end > w.start ? w.items[w.end - 1] : undefined;
}

/** Drops the `n` oldest items. */
export function dropOldest<T>(w: Window<T>, n: number): Window<T> {
  return { items: w.items, start: Math.min(w.start + n, w.end), end: w.end };
}

/** Appends, keeping at most `max` items (the oldest go first). */
export function push<T>(w: Window<T>, item: T, max: number): Window<T> {
  let items = w.items as T[];
  let start = w.start;
  let end = w.end;
  // Another snapshot already appended past our end, or the dead prefix outgrew the live range: copy our
  // live range. Measured against the live range, not `max`, since `dropOldest` evicts under any `max`.
  if (w === EMPTY || items.length !== end || start > 64 + (end - start)) {
    items = items.slice(start, end);
    end -= start;
    start = 0;
  }
  items.push(item);
  end += 1;
  if (end - start > max) start = end - max;
  return { items, start, end };
}

export function* iterate<T>(w: Window<T>): IterableIterator<T> {
  for (let i = w.start; i < w.end; i += 1) yield w.items[i]!;
}

/** Whether the window holds `item` (looked for from the newest, where a retry usually is). */
export function windowIncludes<T>(w: Window<T>, item: T): boolean {
  for (let i = w.end - 1; i >= w.start; i -= 1) if (w.items[i] === item) return true;
  return false;
}
