/**
 * Session idle deadlines (3.4): a session with no logged activity for the idle TTL ends. Deadlines come
 * from the fold (last logged activity plus the TTL), never from when an event happened to be handled, so
 * a restart computes the same ones; one that passed while the host was down fires at once.
 */
import { isHostEvent, type DomainEvent } from '../../machines/chat/events.js';
import type { AfterCommitHandler } from '../core/after-commit.js';
import type { Clock } from '../core/clock.js';
import { Deadlines } from '../core/deadlines.js';
import type { ChatProjection } from './projection.js';

export class IdleDeadlines implements AfterCommitHandler<DomainEvent> {
  readonly name = 'idle deadlines';
  private readonly deadlines: Deadlines<string>;

  constructor(
    private readonly projection: ChatProjection,
    clock: Clock,
    private readonly ttlMs: number,
    /** The session's deadline passed: the engine decides whether it really is idle (`expire`). */
    onDue: (sessionId: string) => void,
  ) {
    this.deadlines = new Deadlines(clock, onDue);
  }

  event(event: DomainEvent): void {
    if (isHostEvent(event) || event.type.startsWith('delivery.')) return;
    if (event.type === 'session.ended') this.deadlines.delete(event.session_id);
    else this.touch(event.session_id);
  }

  /** (Re)arms the session's deadline from its last logged activity. */
  touch(sessionId: string): void {
    const context = this.projection.context(sessionId);
    if (context === undefined || this.projection.isEnded(sessionId)) return;
    this.deadlines.set(sessionId, context.lastActivityAt + this.ttlMs);
  }

  stop(): void {
    this.deadlines.stop();
  }
}
