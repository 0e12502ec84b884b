import { describe, expect, it } from 'vitest';
import { AfterCommit } from '../../engine/core/after-commit.js';

type E = { readonly type: string; readonly n: number };

describe('after-commit dispatch', () => {
  it('gives each handler every event in order, then batchEnd once per batch', () => {
    const seen: string[] = [];
    const dispatch = new AfterCommit<E>(() => {});
    dispatch.add({ name: 'a', event: (e) => seen.push(`a${e.n}`), batchEnd: () => seen.push('a.end') });
    dispatch.add({ name: 'b', event: (e) => seen.push(`b${e.n}`) });
    dispatch.dispatch([
      { type: 'x', n: 1 },
      { type: 'x', n: 2 },
    ]);
    expect(seen).toEqual(['a1', 'b1', 'a2', 'b2', 'a.end']);
  });

  it('reports a failing handler with the event it acted on, and goes on with the others and the batch', () => {
    const failures: Array<[string, string, number | undefined]> = [];
    const seen: number[] = [];
    const dispatch = new AfterCommit<E>((error, handler, event) => failures.push([String((error as Error).message), handler, event?.n]));
    dispatch.add({
      name: 'flaky',
      event: (e) => {
        if (e.n === 1) throw new Error('boom');
      },
      batchEnd: () => {
        throw new Error('late');
      },
    });
    dispatch.add({ name: 'steady', event: (e) => seen.push(e.n) });
    dispatch.dispatch([
      { type: 'x', n: 1 },
      { type: 'x', n: 2 },
    ]);
    expect(seen).toEqual([1, 2]);
    expect(failures).toEqual([
      ['boom', 'flaky', 1],
      ['late', 'flaky', undefined],
    ]);
  });

  it('a handler removed during a dispatch still sees that batch, and no later one', () => {
    const seen: number[] = [];
    const dispatch = new AfterCommit<E>(() => {});
    const remove = dispatch.add({
      name: 'once',
      event: (e) => {
        seen.push(e.n);
        remove();
      },
    });
    dispatch.dispatch([
      { type: 'x', n: 1 },
      { type: 'x', n: 2 },
    ]);
    dispatch.dispatch([{ type: 'x', n: 3 }]);
    expect(seen).toEqual([1, 2]);
  });
});
