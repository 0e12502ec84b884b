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

/**
 * Where each item of a backing array last is, for the items indexed so far. Windows share a backing array
 * only ever appended to, so one index serves them all; it is a memo of the array, not state, and goes
 * with it. About 30 bytes an item, against a scan of the whole window for every item it does not hold
 * (a fresh task id looked up in 1,024 others was a fifth of a turn's CPU).
 */
interface Index<T> {
  readonly latest: Map<T, number>;
  indexed: number;
}
const indexes = new WeakMap<readonly unknown[], Index<unknown>>();
/** Below this many items a scan is cheaper than an index. */
const SCANNED = 32;

function indexOf<T>(items: readonly T[]): Index<T> {
  let index = indexes.get(items) as Index<T> | undefined;
  if (index === undefined) indexes.set(items, (index = { latest: new Map(), indexed: 0 }));
  for (; index.indexed < items.length; index.indexed += 1) index.latest.set(items[index.indexed]!, index.indexed);
  return index;
}

/** Whether the window holds `item`. */
export function windowIncludes<T>(w: Window<T>, item: T): boolean {
  if (w.end - w.start >= SCANNED) {
    const at = indexOf(w.items).latest.get(item);
    if (at === undefined || at < w.start) return false;
    if (at < w.end) return true;
    // Pushed again after this (older) window's end: an earlier copy may still be in its range.
  }
  for (let i = w.end - 1; i >= w.start; i -= 1) if (w.items[i] === item) return true;
  return false;
}
