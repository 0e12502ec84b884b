import { describe, expect, it } from 'vitest';
import { Deadlines } from '../../engine/core/deadlines.js';
import { SimulatedClock } from '../support/clock.js';

function scheduler() {
  const clock = new SimulatedClock(0);
  const due: Array<[string, number]> = [];
  const deadlines = new Deadlines<string>(clock, (key) => due.push([key, clock.now()]));
  return { clock, due, deadlines };
}

describe('deadlines', () => {
  it('fires each key at its own deadline, in deadline order whatever order they were set in, with one timer', () => {
    const { clock, due, deadlines } = scheduler();
    deadlines.set('c', 300);
    deadlines.set('a', 100);
    deadlines.set('b', 200);
    expect(clock.pending).toBe(1);
    clock.increment(99);
    expect(due).toEqual([]);
    clock.increment(201);
    expect(due).toEqual([
      ['a', 100],
      ['b', 200],
      ['c', 300],
    ]);
    expect([deadlines.size, clock.pending]).toEqual([0, 0]);
  });

  it('a key set again moves its deadline (earlier or later); a deleted key never fires', () => {
    const { clock, due, deadlines } = scheduler();
    deadlines.set('later', 100);
    deadlines.set('later', 500);
    deadlines.set('sooner', 400);
    deadlines.set('sooner', 50);
    deadlines.set('gone', 10);
    deadlines.delete('gone');
    clock.increment(1_000);
    expect(due).toEqual([
      ['sooner', 50],
      ['later', 500],
    ]);
  });

  it('a deadline moved later again and again holds one entry, and fires once, at its last time', () => {
    const { clock, due, deadlines } = scheduler();
    for (let at = 100; at <= 100_000; at += 100) deadlines.set('idle', at);
    deadlines.set('other', 50_000);
    expect(deadlines.entries).toBe(2);
    clock.increment(99_999);
    expect(due).toEqual([['other', 50_000]]);
    // Its entry surfaced at 100 and went back in at the live deadline: still one.
    expect(deadlines.entries).toBe(1);
    clock.increment(1);
    expect(due).toEqual([
      ['other', 50_000],
      ['idle', 100_000],
    ]);
    expect([deadlines.entries, clock.pending]).toEqual([0, 0]);
  });

  it('a key moved later, then deleted, never fires; set again after, it fires at its new time', () => {
    const { clock, due, deadlines } = scheduler();
    deadlines.set('a', 100);
    deadlines.set('a', 200);
    deadlines.delete('a');
    deadlines.set('b', 100);
    deadlines.delete('b');
    deadlines.set('b', 300);
    clock.increment(1_000);
    expect(due).toEqual([['b', 300]]);
    expect(deadlines.entries).toBe(0);
  });

  it('a deadline already passed fires at once, and a key set from onDue is kept', () => {
    const clock = new SimulatedClock(1_000);
    const due: string[] = [];
    const deadlines: Deadlines<string> = new Deadlines(clock, (key) => {
      due.push(key);
      if (key === 'again') deadlines.set('again-later', clock.now() + 10);
    });
    deadlines.set('again', 500);
    clock.increment(0);
    expect(due).toEqual(['again']);
    clock.increment(10);
    expect(due).toEqual(['again', 'again-later']);
  });

  it('stop forgets everything and disarms', () => {
    const { clock, due, deadlines } = scheduler();
    deadlines.set('a', 100);
    deadlines.stop();
    deadlines.set('b', 50);
    clock.increment(1_000);
    expect([due, clock.pending]).toEqual([[], 0]);
  });
});
