/**
 * The callback-delivery lifecycle (4.3 rules 5 and 8): one reply on its way to a client's callback.
 * The statechart folds the logged `delivery.*` events; `decideDelivery` turns what happened into them.
 *
 * | State      | Event                | Next       | Note                                                  |
 * |------------|----------------------|------------|-------------------------------------------------------|
 * | waiting    | delivery.attempted   | attempting | attempt n of 4 is about to be POSTed                  |
 * | attempting | delivery.failed      | waiting    | 408, 425, 429, 5xx, timeout, connection error: due again at `retry_at` |
 * | attempting | delivery.succeeded   | succeeded  | any 2xx                                               |
 * | attempting | delivery.abandoned   | abandoned  | redirect, other 4xx, refused URL, or the 4th failure  |
 * | attempting | delivery.interrupted | waiting    | a restart cut the attempt off: made again, not counted |
 * | waiting    | delivery.abandoned   | abandoned  | the client said the session ended                     |
 * | waiting    | delivery.superseded  | superseded | progress behind the head, replaced by a later reply for its task |
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import { LIMITS, type CallbackBlock } from '../../protocol/index.js';
import type { Delivery, DeliveryAbandoned, DeliveryAttempted, DeliveryEvent, DeliveryFailed, DeliveryInterrupted } from './events.js';
import { stepper } from '../core/step.js';

/** What one attempt came to, as a transport reports it (without judging it). */
export type CallbackOutcome =
  /** The receiver answered. `sessionEnded`: its body was `{ok: true, ignored: true, reason: "session_ended"}`. */
  | { readonly kind: 'answered'; readonly status: number; readonly retryAfterMs?: number; readonly sessionEnded: boolean }
  /** The URL failed the connect-time check; no socket was opened. */
  | { readonly kind: 'refused'; readonly reason: string }
  /** No complete answer within the attempt's timeout. */
  | { readonly kind: 'timeout' }
  /** The connection failed or broke before an answer (`code`: e.g. ECONNREFUSED). */
  | { readonly kind: 'connection_failed'; readonly code: string }
  /** The host closed while the attempt was in flight: nothing is decided; the next start interrupts it. */
  | { readonly kind: 'aborted' };

export interface DeliveryContext {
  readonly session_id: string;
  readonly delivery: Delivery;
  /** Where it goes: `{url}/tasks/{task_id}`, with the token as Bearer credential. */
  readonly callback: CallbackBlock;
  /** Exactly what is POSTed: the reply without `task_id` (`callbackBody`). */
  readonly body: string;
  /** `typing` or `tool_call`: coalesced by task while it waits (outbox.ts). */
  readonly progress: boolean;
  /** Attempts made so far (the one in flight included). */
  readonly attempts: number;
  /** When the next attempt may start. */
  readonly dueAt: number;
  readonly lastOutcome: string | undefined;
}

export interface DeliveryInput {
  readonly session_id: string;
  readonly delivery: Delivery;
  readonly callback: CallbackBlock;
  readonly body: string;
  readonly progress: boolean;
  readonly at: number;
}

const SCRATCH: DeliveryContext = {
  session_id: '',
  delivery: { n: 0, task_id: '' },
  callback: { url: '', token: '' },
  body: '',
  progress: false,
  attempts: 0,
  dueAt: 0,
  lastOutcome: undefined,
};

export const deliveryMachine = setup({
  types: {
    context: {} as DeliveryContext,
    input: {} as DeliveryInput,
    events: {} as DeliveryEvent,
  },
  actions: {
    attempt: assign((_, event: DeliveryAttempted) => ({ attempts: event.attempt })),
    retryLater: assign((_, event: DeliveryFailed) => ({ dueAt: event.retry_at, lastOutcome: event.outcome })),
    uncount: assign((_, event: DeliveryInterrupted) => ({ attempts: event.attempt - 1, dueAt: event.at })),
    note: assign(({ context }, event: DeliveryAbandoned) => ({ lastOutcome: event.outcome ?? context.lastOutcome })),
  },
}).createMachine({
  id: 'delivery',
  // `transition()` evaluates this with no input when it builds its scratch actor: keep it total and cheap.
  context: ({ input }) => (input === undefined ? SCRATCH : { ...input, attempts: 0, dueAt: input.at, lastOutcome: undefined }),
  initial: 'waiting',
  states: {
    waiting: {
      on: {
        'delivery.attempted': { target: 'attempting', actions: { type: 'attempt', params: ({ event }) => event } },
        'delivery.abandoned': { target: 'abandoned', actions: { type: 'note', params: ({ event }) => event } },
        'delivery.superseded': { target: 'superseded' },
      },
    },
    attempting: {
      on: {
        'delivery.failed': { target: 'waiting', actions: { type: 'retryLater', params: ({ event }) => event } },
        'delivery.succeeded': { target: 'succeeded' },
        'delivery.abandoned': { target: 'abandoned', actions: { type: 'note', params: ({ event }) => event } },
        'delivery.interrupted': { target: 'waiting', actions: { type: 'uncount', params: ({ event }) => event } },
      },
    },
    succeeded: { type: 'final' },
    abandoned: { type: 'final' },
    superseded: { type: 'final' },
  },
});

export type DeliverySnapshot = SnapshotFrom<typeof deliveryMachine>;

const delivery = stepper(deliveryMachine);

export function initialDelivery(input: DeliveryInput): DeliverySnapshot {
  return delivery.initial(input)[0];
}

export function evolveDelivery(snapshot: DeliverySnapshot, event: DeliveryEvent): DeliverySnapshot {
  return delivery.next(snapshot, event)[0];
}

// ---- decide ------------------------------------------------------------------------------------

export type DeliveryCommand =
  | { readonly type: 'attempt'; readonly at: number }
  | { readonly type: 'outcome'; readonly outcome: CallbackOutcome; readonly at: number }
  | { readonly type: 'interrupt'; readonly at: number }
  | { readonly type: 'abandon'; readonly at: number }
  | { readonly type: 'supersede'; readonly by: number; readonly at: number };

/** What an outcome means for the delivery: done, worth another attempt, or never going to work. */
export type DeliveryVerdict =
  | { readonly kind: 'succeeded'; readonly status: number; readonly sessionEnded: boolean }
  | { readonly kind: 'retry'; readonly outcome: string; readonly retryAfterMs: number | undefined }
  | { readonly kind: 'permanent'; readonly outcome: string };

const RETRY_STATUSES = new Set([408, 425, 429]);

export function judgeDelivery(outcome: Exclude<CallbackOutcome, { kind: 'aborted' }>): DeliveryVerdict {
  switch (outcome.kind) {
    case 'answered': {
      const { status } = outcome;
      if (status >= 200 && status < 300) return { kind: 'succeeded', status, sessionEnded: outcome.sessionEnded };
      if (RETRY_STATUSES.has(status) || (status >= 500 && status < 600)) {
        return { kind: 'retry', outcome: `status ${status}`, retryAfterMs: outcome.retryAfterMs };
      }
      // Redirects are never followed (the target was not validated) and other 4xx will not change.
      return { kind: 'permanent', outcome: `status ${status}` };
    }
    case 'refused':
      return { kind: 'permanent', outcome: `refused: ${outcome.reason}` };
    case 'timeout':
      return { kind: 'retry', outcome: 'timeout', retryAfterMs: undefined };
    case 'connection_failed':
      return { kind: 'retry', outcome: outcome.code, retryAfterMs: undefined };
  }
}

/** Wait before attempt `attempt + 1`: 250 ms, doubling; a `Retry-After` may stretch it, up to a cap. */
export function backoffMs(attempt: number, retryAfterMs: number | undefined): number {
  const backoff = LIMITS.callbackBackoffMs * 2 ** (attempt - 1);
  return retryAfterMs === undefined ? backoff : Math.max(backoff, Math.min(retryAfterMs, LIMITS.callbackRetryAfterMaxMs));
}

export function decideDelivery(command: DeliveryCommand, snapshot: DeliverySnapshot): DeliveryEvent[] {
  const {
    session_id,
    delivery: { n },
    attempts,
  } = snapshot.context;
  const { at } = command;
  switch (command.type) {
    case 'attempt':
      if (snapshot.value !== 'waiting' || at < snapshot.context.dueAt) return [];
      return [{ type: 'delivery.attempted', session_id, n, attempt: attempts + 1, at }];
    case 'interrupt':
      return snapshot.value === 'attempting' ? [{ type: 'delivery.interrupted', session_id, n, attempt: attempts, at }] : [];
    case 'supersede':
      return snapshot.value === 'waiting' && snapshot.context.progress
        ? [{ type: 'delivery.superseded', session_id, n, by: command.by, at }]
        : [];
    case 'abandon':
      return snapshot.status === 'active' && snapshot.value !== 'attempting'
        ? [{ type: 'delivery.abandoned', session_id, n, attempts, reason: 'session_ended', at }]
        : [];
    case 'outcome': {
      if (snapshot.value !== 'attempting' || command.outcome.kind === 'aborted') return [];
      const verdict = judgeDelivery(command.outcome);
      if (verdict.kind === 'succeeded')
        return [{ type: 'delivery.succeeded', session_id, n, attempt: attempts, status: verdict.status, at }];
      if (verdict.kind === 'permanent') {
        return [{ type: 'delivery.abandoned', session_id, n, attempts, reason: 'permanent', outcome: verdict.outcome, at }];
      }
      if (attempts >= LIMITS.callbackAttempts) {
        return [{ type: 'delivery.abandoned', session_id, n, attempts, reason: 'attempts_exhausted', outcome: verdict.outcome, at }];
      }
      return [
        {
          type: 'delivery.failed',
          session_id,
          n,
          attempt: attempts,
          outcome: verdict.outcome,
          retry_at: at + backoffMs(attempts, verdict.retryAfterMs),
          at,
        },
      ];
    }
  }
}
