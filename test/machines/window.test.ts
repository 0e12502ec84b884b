import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  dropOldest,
  emptyWindow,
  iterate,
  newest,
  oldest,
  push,
  windowIncludes,
  windowSize,
  windowToArray,
  type Window,
} from '../../machines/core/window.js';

function pushAll<T>(w: Window<T>, items: readonly T[], max: number): Window<T> {
  return items.reduce((acc, item) => push(acc, item, max), w);
}

function read<T>(w: Window<T>) {
  return { items: windowToArray(w), size: windowSize(w), oldest: oldest(w), newest: newest(w), iterated: [...iterate(w)] };
}

/** What `read` gives for a window holding exactly `items`, oldest first. */
function holding<T>(items: readonly T[]) {
  return { items, size: items.length, oldest: items[0], newest: items.at(-1), iterated: items };
}

describe('window: push keeps the newest `max` items', () => {
  it.each([
    { pushed: [], max: 3, expected: [] },
    { pushed: ['a'], max: 3, expected: ['a'] },
    { pushed: ['a', 'b', 'c'], max: 3, expected: ['a', 'b', 'c'] },
    { pushed: ['a', 'b', 'c', 'd'], max: 3, expected: ['b', 'c', 'd'] },
    { pushed: ['a', 'b', 'c', 'd', 'e', 'f', 'g'], max: 3, expected: ['e', 'f', 'g'] },
    { pushed: ['a', 'b', 'c'], max: 1, expected: ['c'] },
  ])('push $pushed with max $max reads $expected', ({ pushed, max, expected }) => {
    const w = pushAll(emptyWindow<string>(), pushed, max);
    expect(read(w)).toEqual(holding(expected));
  });
});

describe('window: dropOldest', () => {
  const abcd = pushAll(emptyWindow<string>(), ['a', 'b', 'c', 'd'], 10);

  it.each([
    { n: 0, expected: ['a', 'b', 'c', 'd'] },
    { n: 1, expected: ['b', 'c', 'd'] },
    { n: 3, expected: ['d'] },
    { n: 4, expected: [] },
    { n: 9, expected: [] },
  ])('dropOldest($n) of [a b c d] reads $expected', ({ n, expected }) => {
    const w = dropOldest(abcd, n);
    expect(read(w)).toEqual(holding(expected));
    expect(windowToArray(abcd)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('pushing after dropping everything starts over', () => {
    expect(windowToArray(push(dropOldest(abcd, 4), 'e', 10))).toEqual(['e']);
  });
});

describe('window: persistence', () => {
  it('pushing onto an older snapshot changes neither that snapshot nor a newer one', () => {
    const w1 = pushAll(emptyWindow<string>(), ['a', 'b'], 5);
    const w2 = push(w1, 'c', 5);
    const w3 = push(w1, 'x', 5);
    expect(windowToArray(w1)).toEqual(['a', 'b']);
    expect(windowToArray(w2)).toEqual(['a', 'b', 'c']);
    expect(windowToArray(w3)).toEqual(['a', 'b', 'x']);
    // And the branches keep growing independently.
    const w4 = push(w2, 'd', 5);
    const w5 = push(w3, 'y', 5);
    expect([w1, w2, w3, w4, w5].map((w) => windowToArray(w))).toEqual([
      ['a', 'b'],
      ['a', 'b', 'c'],
      ['a', 'b', 'x'],
      ['a', 'b', 'c', 'd'],
      ['a', 'b', 'x', 'y'],
    ]);
  });

  it('pushing onto the newest snapshot does not change what older snapshots read', () => {
    const snapshots: Window<number>[] = [emptyWindow()];
    for (let i = 1; i <= 10; i += 1) snapshots.push(push(snapshots[snapshots.length - 1]!, i, 4));
    expect(snapshots.map((w) => windowToArray(w))).toEqual([
      [],
      [1],
      [1, 2],
      [1, 2, 3],
      [1, 2, 3, 4],
      [2, 3, 4, 5],
      [3, 4, 5, 6],
      [4, 5, 6, 7],
      [5, 6, 7, 8],
      [6, 7, 8, 9],
      [7, 8, 9, 10],
    ]);
  });

  it('pushing onto an older snapshot past the bound evicts only from the new snapshot', () => {
    const w1 = pushAll(emptyWindow<string>(), ['a', 'b', 'c'], 3);
    const newer = push(w1, 'd', 3);
    const branch = push(w1, 'x', 3);
    expect([windowToArray(w1), windowToArray(newer), windowToArray(branch)]).toEqual([
      ['a', 'b', 'c'],
      ['b', 'c', 'd'],
      ['b', 'c', 'x'],
    ]);
  });

  it('pushing onto a dropOldest snapshot leaves the undropped one intact, and vice versa', () => {
    const w = pushAll(emptyWindow<string>(), ['a', 'b', 'c'], 10);
    const dropped = dropOldest(w, 2);
    const fromDropped = push(dropped, 'd', 10);
    const fromW = push(w, 'e', 10);
    expect([w, dropped, fromDropped, fromW].map((s) => windowToArray(s))).toEqual([
      ['a', 'b', 'c'],
      ['c'],
      ['c', 'd'],
      ['a', 'b', 'c', 'e'],
    ]);
  });
});

describe('window: the shared empty window', () => {
  it('is one value, and pushing onto it never mutates it', () => {
    const empty = emptyWindow<string>();
    expect(emptyWindow<number>()).toBe(empty);
    const a = push(empty, 'a', 3);
    const b = push(emptyWindow<string>(), 'b', 3);
    pushAll(a, ['c', 'd', 'e'], 3);
    expect(empty).toEqual({ items: [], start: 0, end: 0 });
    expect(emptyWindow<string>().items).toEqual([]);
    expect(windowToArray(a)).toEqual(['a']);
    expect(windowToArray(b)).toEqual(['b']);
  });

  it('dropOldest on the empty window is still empty', () => {
    expect(read(dropOldest(emptyWindow<string>(), 3))).toEqual(holding([]));
  });
});

describe('window: the backing array stays bounded', () => {
  // A window must not hold on to items it no longer reads (the backlog's are up to 256 KiB each).
  it('when `max` evicts', () => {
    let w = emptyWindow<number>();
    for (let i = 1; i <= 10_000; i += 1) w = push(w, i, 3);
    expect(windowToArray(w)).toEqual([9_998, 9_999, 10_000]);
    expect(w.items.length).toBeLessThanOrEqual(64 + 2 * 3 + 1);
  });

  it('when dropOldest evicts under an unbounded `max`', () => {
    let w = emptyWindow<number>();
    for (let i = 1; i <= 10_000; i += 1) {
      w = push(w, i, Number.MAX_SAFE_INTEGER);
      if (windowSize(w) > 3) w = dropOldest(w, 1);
    }
    expect(windowToArray(w)).toEqual([9_998, 9_999, 10_000]);
    expect(w.items.length).toBeLessThanOrEqual(64 + 2 * 3 + 1);
  });

  it('windowIncludes says what the window holds, for older windows sharing its array too, and items pushed again', () => {
    // Steps mostly on the newest window (so long windows share arrays with older ones), now and then on an
    // older one: push (ids from a small pool, so repeats happen), or drop the oldest.
    const step = fc.oneof(
      { arbitrary: fc.record({ from: fc.nat(), push: fc.integer({ min: 0, max: 80 }) }), weight: 6 },
      { arbitrary: fc.record({ from: fc.nat(), drop: fc.integer({ min: 1, max: 10 }) }), weight: 1 },
    );
    fc.assert(
      fc.property(fc.array(step, { minLength: 100, maxLength: 400 }), fc.integer({ min: 1, max: 200 }), (steps, max) => {
        const seen: Window<string>[] = [emptyWindow()];
        for (const each of steps) {
          const w = each.from % 6 === 0 ? seen[each.from % seen.length]! : seen.at(-1)!;
          seen.push('push' in each ? push(w, `id-${each.push}`, max) : dropOldest(w, each.drop));
        }
        const ids = Array.from({ length: 81 }, (_, id) => `id-${id}`);
        for (const w of seen) {
          const held = new Set(windowToArray(w));
          const wrong = ids.filter((id) => windowIncludes(w, id) !== held.has(id));
          if (wrong.length > 0) return false;
        }
        return true;
      }),
      { numRuns: 100 },
    );
  });
});
