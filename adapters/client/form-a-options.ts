/** What a `FormAClient` is given: its host, how it waits, and who hears of what it does. Browser-safe. */
import type { ClientSubscriptionEvent, ClientSubscriptionSnapshot } from '../../machines/client/client-subscription.js';
import type { ClientTaskEvent, ClientTaskSnapshot } from '../../machines/client/client-task.js';
import { clientClock, type Clock } from './clock.js';

export interface FormAClientOptions {
  /** The host's base URL. */
  readonly url: string;
  /** Its ASSISTANT_TOKEN. */
  readonly token: string;
  /** First backoff step and ceiling, ms. Default 250 ms and 30 s. */
  readonly backoff?: { readonly baseMs: number; readonly capMs: number };
  /** Jitter (default `Math.random`). */
  readonly random?: () => number;
  /** Where time comes from: every wait, timer and timestamp of the client. Default the system's. */
  readonly clock?: Clock;
  /**
   * Told of each stream the client opens or loses, for a UI that shows "reconnecting": `waiting` as soon
   * as a stream drops or an attempt to open one fails (the next attempt comes after a backoff), `open`
   * when one is open (again), `closed` when the client lets it go.
   */
  readonly onStream?: (session_id: string, state: 'open' | 'waiting' | 'closed') => void;
  /** Told of every event the client's statecharts take and the snapshot it leaves: for a debugger, or a test that follows the machines. */
  readonly inspect?: (transition: ClientTransition) => void;
}

/** One step of a task's or a session subscription's statechart. */
export type ClientTransition =
  | {
      readonly machine: 'clientTask';
      readonly session_id: string;
      readonly task_id: string;
      readonly event: ClientTaskEvent;
      readonly snapshot: ClientTaskSnapshot;
    }
  | {
      readonly machine: 'clientSubscription';
      readonly session_id: string;
      readonly event: ClientSubscriptionEvent;
      readonly snapshot: ClientSubscriptionSnapshot;
    };

/** The options with their defaults in place. */
export type FormASettings = FormAClientOptions & { readonly clock: Clock; readonly random: () => number };

export const withDefaults = (options: FormAClientOptions): FormASettings => ({
  ...options,
  clock: options.clock ?? clientClock,
  random: options.random ?? Math.random,
});
