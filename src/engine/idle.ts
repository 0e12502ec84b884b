/**
 * Session idle deadlines (3.4): a session with no logged activity for the idle TTL ends. One timer, for the
 * earliest deadline. Deadlines come from the fold (last logged activity plus the TTL), never from when an
 * event happened to be handled, so a restart computes the same ones; one that passed while the host was
 * down fires at once. Sessions are kept in deadline order by re-inserting on every touch (activity only
 * moves forward).
 */
import type { DomainEvent } from '../machines/events.js';
import type { AfterCommitHandler } from './after-commit.js';
import type { Clock, TimerHandle } from './clock.js';
import type { ChatProjection } from './projection.js';

export class IdleDeadlines implements AfterCommitHandler<DomainEvent> {
  readonly name = 'idle deadlines';
  private readonly deadlines = new Map<string, number>();
  private timer: TimerHandle;
  private armedFor: number | undefined;
  private stopped = false;

  constructor(
    private readonly projection: ChatProjection,
    private readonly clock: Clock,
    private readonly ttlMs: number,
    /** The session's deadline passed: the engine decides whether it really is idle (`expire`). */
    private readonly onDue: (sessionId: string) => void,
  ) {}

  event(event: DomainEvent): void {
    if (event.type === 'host.started' || event.type.startsWith('delivery.')) return;
    if (event.type === 'session.ended') this.deadlines.delete(event.session_id);
    else this.touch(event.session_id);
  }

  /** (Re)arms the session's deadline from its last logged activity. */
  touch(sessionId: string): void {
    const context = this.projection.context(sessionId);
    if (this.stopped || context === undefined || this.projection.isEnded(sessionId)) return;
    this.deadlines.delete(sessionId);
    this.deadlines.set(sessionId, context.lastActivityAt + this.ttlMs);
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    this.disarm();
  }

  private disarm(): void {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = undefined;
  }

  private arm(): void {
    const first = this.deadlines.values().next();
    if (first.done) return this.disarm();
    if (this.armedFor !== undefined && this.armedFor <= first.value) return;
    this.clock.clearTimeout(this.timer);
    this.armedFor = first.value;
    this.timer = this.clock.setTimeout(() => this.fire(), first.value - this.clock.now());
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
