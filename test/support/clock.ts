/**
 * A clock whose time moves only when a test says so (as XState's SimulatedClock): `now()` is the simulated
 * time, and timers armed through it run, in due order, when `increment` passes their due time (one armed
 * already past its due time runs at once). Tests of
 * keep-alives, idle deadlines and retry backoffs drive time with it instead of sleeping.
 */
import type { Clock, TimerHandle } from '../../engine/core/clock.js';

interface Timer {
  readonly at: number;
  readonly fn: () => void;
}

export class SimulatedClock implements Clock {
  private time: number;
  private nextId = 1;
  private readonly timers = new Map<number, Timer>();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { at: this.time + Math.max(0, ms), fn });
    // Armed already past its due time (a deadline another node's commit brought here late): it runs at once,
    // as a real timer would, not at the next increment.
    if (ms < 0)
      setImmediate(() => {
        if (this.timers.delete(id)) fn();
      });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    if (typeof handle === 'number') this.timers.delete(handle);
  }

  /** Timers armed and not yet run. */
  get pending(): number {
    return this.timers.size;
  }

  /** Moves time on to `at` (not back), as `increment` does. */
  incrementTo(at: number): void {
    if (at < this.time) throw new Error(`the clock is at ${this.time}, past ${at}`);
    this.increment(at - this.time);
  }

  /** Moves time on by `ms`, running each timer that falls due at its own time, earliest (then oldest) first. */
  increment(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      let due: [number, Timer] | undefined;
      for (const entry of this.timers) if (entry[1].at <= until && (due === undefined || entry[1].at < due[1].at)) due = entry;
      if (due === undefined) break;
      this.timers.delete(due[0]);
      this.time = due[1].at;
      due[1].fn();
    }
    this.time = until;
  }
}
