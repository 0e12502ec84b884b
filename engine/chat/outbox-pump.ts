/**
 * Moves every session's callback outbox on (4.3, 8). Once a reply is queued, or an attempt's outcome is
 * committed, the pump looks at the session's head: due now, it logs `delivery.attempted`, and only once
 * that is committed does the POST start; due later, it arms a wake-up at the logged deadline. What the
 * transport reports comes back as an outbox command, and is logged before anything else is tried.
 */
import type { DeliveryAbandoned, DomainEvent } from '../../machines/chat/events.js';
import { head, type OutboxCommand } from '../../machines/chat/outbox.js';
import type { AfterCommitHandler } from '../core/after-commit.js';
import type { CallbackOutcome, CallbackTransport } from './callback.js';
import type { Clock } from '../core/clock.js';
import type { CommandPort } from './command-port.js';
import { DeliveryEffects } from './deliveries.js';
import { inBackground } from '../core/failures.js';
import type { ChatProjection } from './projection.js';

export class OutboxPump implements AfterCommitHandler<DomainEvent> {
  readonly name = 'outbox pump';
  private readonly effects: DeliveryEffects;

  constructor(
    private readonly projection: ChatProjection,
    private readonly commands: CommandPort,
    private readonly clock: Clock,
    transport: CallbackTransport,
    private readonly onAbandoned: (event: DeliveryAbandoned) => void,
  ) {
    this.effects = new DeliveryEffects(transport, clock, {
      due: (sessionId) => this.pump(sessionId),
      answered: (sessionId, n, outcome) => this.answered(sessionId, n, outcome),
    });
  }

  event(event: DomainEvent): void {
    switch (event.type) {
      case 'task.progressed':
      case 'task.settled':
      case 'reply.queued':
        if (event.delivery !== undefined) this.queued(event.session_id, event.delivery.n, event.at);
        return;
      case 'delivery.attempted': {
        const attempt = this.projection.outbox(event.session_id).queue.get(event.n);
        if (attempt !== undefined && !this.commands.closing) this.effects.post(attempt.context);
        return;
      }
      case 'delivery.abandoned':
        this.onAbandoned(event);
        this.pump(event.session_id);
        return;
      case 'delivery.failed':
      case 'delivery.succeeded':
      case 'delivery.interrupted':
      case 'delivery.superseded':
        this.pump(event.session_id);
        return;
      default:
        return;
    }
  }

  /** On start: an attempt a crash cut off is interrupted (made again, not counted), and every outbox moves on. */
  async recover(): Promise<void> {
    for (const sessionId of this.projection.outboxSessionIds()) {
      await this.decide(sessionId, { type: 'interrupt', at: this.clock.now() });
      this.pump(sessionId);
    }
  }

  stop(): void {
    this.effects.stop();
  }

  /** A reply was queued: what it makes stale is superseded, then the outbox moves on. */
  private queued(sessionId: string, n: number, at: number): void {
    if (this.commands.closing) return;
    const context = { what: 'coalescing queued progress', session_id: sessionId };
    inBackground(this.decide(sessionId, { type: 'coalesce', n, at }), this.commands.report, context);
    this.pump(sessionId);
  }

  /** Attempts the session's head if it is due, or wakes up when it will be. */
  private pump(sessionId: string): void {
    if (this.commands.closing) return;
    const first = head(this.projection.outbox(sessionId));
    if (first === undefined || first.value !== 'waiting') return this.effects.wakeAt(sessionId, undefined);
    const now = this.clock.now();
    if (first.context.dueAt > now) return this.effects.wakeAt(sessionId, first.context.dueAt);
    this.effects.wakeAt(sessionId, undefined);
    // The attempt is logged first; its POST starts once `delivery.attempted` is committed (see `event`).
    inBackground(this.decide(sessionId, { type: 'attempt', at: now }), this.commands.report, {
      what: 'callback attempt',
      session_id: sessionId,
    });
  }

  private async decide(sessionId: string, command: OutboxCommand): Promise<void> {
    const { events } = this.projection.decideOutbox(sessionId, command);
    if (events.length > 0) await this.commands.append(events);
  }

  /** What the transport reported for attempt `n`. A closing host decides nothing: the next start makes it again. */
  private answered(sessionId: string, n: number, outcome: CallbackOutcome): void {
    if (this.commands.closing) return;
    const at = this.clock.now();
    const decision = this.projection.decideOutbox(sessionId, { type: 'outcome', n, outcome, at });
    if (decision.events.length === 0) return;
    const context = { what: 'callback outcome', session_id: sessionId };
    inBackground(this.commands.append(decision.events), this.commands.report, context);
    if (decision.outcome === 'session_ended') this.endedByClient(sessionId, at);
  }

  /**
   * The callback answered `{ok: true, ignored: true, reason: "session_ended"}`: the session ends here too,
   * and what is still queued for it (replies the end itself settled included) is abandoned, visibly. All
   * in the same batch as the answer's own event: each command folds before it awaits.
   */
  private endedByClient(sessionId: string, at: number): void {
    const context = { what: 'session ended by its callback', session_id: sessionId };
    inBackground(
      this.commands.run({ type: 'end', session_id: sessionId, reason: 'client', epoch: this.commands.epoch, at }),
      this.commands.report,
      context,
    );
    inBackground(this.decide(sessionId, { type: 'abandon', at }), this.commands.report, context);
  }
}
