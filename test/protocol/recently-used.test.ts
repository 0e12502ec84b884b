/** The bounded memo behind response_schema compiling and digests: same JSON text, same thing made; least lately used dropped; a throw not kept. */
import { describe, expect, it } from 'vitest';
import { RecentlyUsed } from '../../protocol/byo/recently-used.js';

describe('RecentlyUsed', () => {
  it('makes once for the same JSON text, whichever object carries it', () => {
    const memo = new RecentlyUsed<number>(4);
    let made = 0;
    const make = () => ++made;
    expect(memo.of({ a: [1, 2] }, make)).toBe(1);
    expect(memo.of({ a: [1, 2] }, make)).toBe(1);
    expect(memo.of({ a: [2, 1] }, make)).toBe(2);
    expect(made).toBe(2);
  });

  it('keeps at most its bound, dropping the least lately used', () => {
    const memo = new RecentlyUsed<string>(2);
    const made: string[] = [];
    const make = (value: string) => (made.push(value), value);
    memo.of('a', make);
    memo.of('b', make);
    memo.of('a', make); // a is now the latest used
    memo.of('c', make); // drops b
    memo.of('a', make);
    memo.of('b', make);
    expect(made).toEqual(['a', 'b', 'c', 'b']);
  });

  it('keeps nothing of a make that throws', () => {
    const memo = new RecentlyUsed<number>(2);
    let calls = 0;
    const failing = () => {
      calls += 1;
      throw new Error('refused');
    };
    expect(() => memo.of('x', failing)).toThrow('refused');
    expect(() => memo.of('x', failing)).toThrow('refused');
    expect(calls).toBe(2);
  });
});
