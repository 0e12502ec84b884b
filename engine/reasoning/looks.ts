/**
 * A shared log's looks for what other nodes committed: one every `everyMs`, whatever the broker said, so
 * that a node learns of every commit even when the broker is away or there is none. A look that fails
 * (the store is away) is simply followed by the next.
 */
import type { Clock, TimerHandle } from '../core/clock.js';

/** How often a node looks when no one says: once a second. */
export const LOOK_EVERY_MS = 1_000;

export class Looks {
  private timer: TimerHandle;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly everyMs: number,
    private readonly look: () => Promise<void>,
  ) {}

  /** The next look, `everyMs` from now (and each one after it). */
  start(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimeout(() => {
      this.look().then(
        () => this.start(),
        () => this.start(),
      );
    }, this.everyMs);
  }

  stop(): void {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
  }
}
