/**
 * Session idle deadlines: one timer for the earliest. Deadlines are derived from logged activity, so
 * after a restart they are rescheduled from the fold; one that passed while the host was down fires at
 * once. Sessions are kept in deadline order by re-inserting on every touch (activity only moves forward).
 */
import type { Clock } from './clock.js';

/** setTimeout's ceiling (~24.8 days); longer waits re-arm. */
const MAX_DELAY = 2 ** 31 - 1;

export class IdleDeadlines {
  private readonly deadlines = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private armedFor: number | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly onDue: (sessionId: string) => void,
  ) {}

  touch(sessionId: string, deadline: number): void {
    this.deadlines.delete(sessionId);
    this.deadlines.set(sessionId, deadline);
    this.arm();
  }

  forget(sessionId: string): void {
    this.deadlines.delete(sessionId);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = undefined;
  }

  private arm(): void {
    const first = this.deadlines.values().next();
    if (first.done) return this.stop();
    if (this.timer !== undefined && this.armedFor !== undefined && this.armedFor <= first.value) return;
    clearTimeout(this.timer);
    this.armedFor = first.value;
    this.timer = setTimeout(() => this.fire(), Math.min(MAX_DELAY, Math.max(0, first.value - this.clock.now())));
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = undefined;
    const now = this.clock.now();
    const due: string[] = [];
    for (const [sessionId, deadline] of this.deadlines) {
      if (deadline > now) break;
      due.push(sessionId);
    }
    for (const sessionId of due) {
      this.deadlines.delete(sessionId);
      this.onDue(sessionId);
    }
    this.arm();
  }
}
