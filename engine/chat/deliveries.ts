/**
 * The effects of callback delivery: each session's retry timer, and the POSTs in flight. It decides
 * nothing: the outbox pump tells it when a session's outbox head is due and which attempt to make (each
 * one already logged as `delivery.attempted`), and gets back what the transport reported.
 */
import type { DeliveryContext } from '../../machines/chat/delivery.js';
import { failureCode, type CallbackOutcome, type CallbackTransport } from './callback.js';
import type { Clock, TimerHandle } from '../core/clock.js';

export interface DeliveryHandlers {
  /** The session's outbox head is due: it may be attempted now. */
  due(sessionId: string): void;
  answered(sessionId: string, n: number, outcome: CallbackOutcome): void;
}

export class DeliveryEffects {
  private readonly timers = new Map<string, { readonly at: number; readonly timer: TimerHandle }>();
  private readonly stopping = new AbortController();

  constructor(
    private readonly transport: CallbackTransport,
    private readonly clock: Clock,
    private readonly handlers: DeliveryHandlers,
  ) {}

  /** Wakes the pump for the session at `dueAt`; `undefined` cancels. Deadlines come from the log, so a restart re-arms them. */
  wakeAt(sessionId: string, dueAt: number | undefined): void {
    const armed = this.timers.get(sessionId);
    if (armed !== undefined && armed.at === dueAt) return;
    this.clock.clearTimeout(armed?.timer);
    this.timers.delete(sessionId);
    if (dueAt === undefined || this.stopping.signal.aborted) return;
    const timer = this.clock.setTimeout(() => {
      this.timers.delete(sessionId);
      this.handlers.due(sessionId);
    }, dueAt - this.clock.now());
    this.timers.set(sessionId, { at: dueAt, timer });
  }

  /** Makes one logged attempt. */
  post(delivery: DeliveryContext): void {
    const {
      session_id,
      delivery: { n, task_id },
      callback: { url, token },
      body,
    } = delivery;
    this.transport.post({ url, token, task_id, body, signal: this.stopping.signal }).then(
      (outcome) => this.handlers.answered(session_id, n, outcome),
      // A transport reports; it should not throw. If it does, that is a failed connection, never a lost reply.
      (error: unknown) => this.handlers.answered(session_id, n, { kind: 'connection_failed', code: failureCode(error) }),
    );
  }

  /** Stops every timer and aborts what is in flight; those attempts are interrupted on the next start. */
  stop(): void {
    this.stopping.abort();
    for (const { timer } of this.timers.values()) this.clock.clearTimeout(timer);
    this.timers.clear();
  }
}
