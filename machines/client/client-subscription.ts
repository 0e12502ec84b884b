/**
 * A session's subscription as the client holds it (3.1): one physical stream per session, shared by every
 * pending task, opened before the first dispatch and closed when the last pending task settles (rule 3).
 * A dropped stream is opened again after a wait (backoff with full jitter, or the 429's `Retry-After`,
 * drawn by the runtime and given here as `retry_at`), resuming from the newest terminal reply's id.
 *
 * | State      | Event          | Next       | Note                                                  |
 * |------------|----------------|------------|-------------------------------------------------------|
 * | connecting | stream.opened  | open       | 200 and `: open`                                      |
 * | connecting | stream.failed  | waiting    | refused (a 429, a 5xx) or unreachable                 |
 * | open       | reply.id       | open       | a terminal reply's id: the cursor to resume from      |
 * | open       | stream.dropped | waiting    | the connection ended or was cut                       |
 * | waiting    | retry          | connecting | the wait is over                                      |
 * | any        | close          | closed     | no task is pending any more, or the client closes     |
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import { stepper } from '../core/step.js';

export type ClientSubscriptionEvent =
  | { readonly type: 'stream.opened'; readonly at: number }
  | { readonly type: 'stream.failed'; readonly retry_at: number; readonly at: number }
  | { readonly type: 'stream.dropped'; readonly retry_at: number; readonly at: number }
  | { readonly type: 'reply.id'; readonly id: string; readonly at: number }
  | { readonly type: 'retry'; readonly at: number }
  | { readonly type: 'close'; readonly at: number };

export interface ClientSubscriptionContext {
  readonly session_id: string;
  /** The newest terminal reply's id: `Last-Event-ID` of the next connection. */
  readonly cursor: string | undefined;
  /** Failed or dropped connections in a row: what the backoff grows with. */
  readonly failures: number;
  /** Connections opened so far. */
  readonly opened: number;
  readonly retry_at: number | undefined;
}

export const clientSubscriptionMachine = setup({
  types: { context: {} as ClientSubscriptionContext, input: {} as { readonly session_id: string }, events: {} as ClientSubscriptionEvent },
  actions: {
    opened: assign(({ context }) => ({ failures: 0, opened: context.opened + 1, retry_at: undefined })),
    wait: assign(({ context }, event: { readonly retry_at: number }) => ({ failures: context.failures + 1, retry_at: event.retry_at })),
    cursor: assign((_, event: { readonly id: string }) => ({ cursor: event.id })),
  },
}).createMachine({
  id: 'clientSubscription',
  context: ({ input }) => ({ session_id: input?.session_id ?? '', cursor: undefined, failures: 0, opened: 0, retry_at: undefined }),
  initial: 'connecting',
  states: {
    connecting: {
      on: {
        'stream.opened': { target: 'open', actions: 'opened' },
        'stream.failed': { target: 'waiting', actions: { type: 'wait', params: ({ event }) => event } },
      },
    },
    open: {
      on: {
        'reply.id': { target: 'open', actions: { type: 'cursor', params: ({ event }) => event } },
        'stream.dropped': { target: 'waiting', actions: { type: 'wait', params: ({ event }) => event } },
      },
    },
    waiting: { on: { retry: { target: 'connecting' } } },
    closed: { type: 'final' },
  },
  on: { close: { target: '.closed' } },
});

export type ClientSubscriptionSnapshot = SnapshotFrom<typeof clientSubscriptionMachine>;

const subscription = stepper(clientSubscriptionMachine);

export function initialClientSubscription(session_id: string): ClientSubscriptionSnapshot {
  return subscription.initial({ session_id })[0];
}

export function evolveClientSubscription(snapshot: ClientSubscriptionSnapshot, event: ClientSubscriptionEvent): ClientSubscriptionSnapshot {
  return subscription.next(snapshot, event)[0];
}
