/**
 * The backend relay's seams, chosen here for its engine (engine/reasoning/seams.ts), which chooses none:
 * on an SQLite log of this process, its log, a channel, presence and pairing attempts in memory; on a
 * PostgreSQL log several nodes share, the shared log, presence and attempts in PostgreSQL, and a channel
 * over the broker when there is one (without one, nodes learn of each other's commits at their next look).
 */
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import { randomIds, systemClock, type Clock, type IdSource } from '../../engine/core/clock.js';
import { inBackground, type FailureContext } from '../../engine/core/failures.js';
import { LocalBackendLog } from '../../engine/reasoning/backend-log.js';
import { ClusterChannel } from '../../engine/reasoning/channel.js';
import type { ReasoningEngineConfig } from '../../engine/reasoning/config.js';
import { attemptsKeptFor, pairingLimitsOf } from '../../engine/reasoning/pairing-limits.js';
import { SoleOwnership } from '../../engine/reasoning/ownership.js';
import { LocalPairingAttempts, LocalPresence } from '../../engine/reasoning/presence.js';
import { LocalPubSub, type PubSub } from '../../engine/reasoning/pubsub.js';
import type { BackendSeams } from '../../engine/reasoning/seams.js';
import { SharedBackendLog } from '../../engine/reasoning/shared-log.js';
import { EventLog } from '../../storage/event-log.js';
import type { PgEventLog } from '../../storage/postgres/event-log.js';
import { PgPairingAttempts, PgPresence } from '../../storage/postgres/presence.js';

/** Where the backend keeps its log: an embedded SQLite file, or PostgreSQL shared by several nodes. */
export type BackendStore = EventLog<BackendEvent> | PgEventLog<BackendEvent>;

/** The engine's settings and what its seams are chosen by. */
export interface BackendRelayConfig extends ReasoningEngineConfig {
  readonly clock?: Clock;
  readonly ids?: IdSource;
  /** On a log of this process: where a committed job change is published for streams and followers (default: this process alone). */
  readonly pubsub?: PubSub;
  /** On a shared log: how often a node looks for what other nodes committed, whatever the broker says. Default 1 s. */
  readonly lookEveryMs?: number;
  /** On a shared log: decisions waiting for the store at most; one more is answered 503 `store_unavailable`. Default 10,000. */
  readonly maxQueuedDecisions?: number;
  /** Committed events between two snapshots of the fold (engine/core/snapshots.ts). Default 50,000. */
  readonly snapshotEveryEvents?: number;
  /** On a log of this process: it can no longer be written, and the process must restart from it. Default: thrown. */
  readonly onFatal?: (error: unknown) => void;
  /** A failure nobody awaits. Default: a process warning. */
  readonly onError?: (error: unknown, context: FailureContext) => void;
}

/**
 * The seams of a backend on `store`; `broker` carries the channel between the nodes of a shared one, and
 * `appending` is handed each append to a shared one (its timing, for `/metrics`).
 */
export function backendSeams(
  store: BackendStore,
  config: BackendRelayConfig = {},
  broker?: PubSub,
  appending?: (append: Promise<unknown>) => void,
): BackendSeams {
  const clock = config.clock ?? systemClock;
  const report = config.onError ?? warnOf;
  const subscriberFailed = (error: unknown, topic: string) => report(error, { what: `a subscriber of ${topic}` });
  const attemptsKeepMs = attemptsKeptFor(pairingLimitsOf(config.pairingLimits));
  const snapshots = config.snapshotEveryEvents === undefined ? {} : { snapshotEveryEvents: config.snapshotEveryEvents };
  const common = { clock, ids: config.ids ?? randomIds, report };
  if (store instanceof EventLog) {
    if (broker !== undefined) {
      throw new Error('a broker carries the channel between nodes that share a PostgreSQL log: this backend has its own');
    }
    const onFatal =
      config.onFatal ??
      ((error) =>
        process.nextTick(() => {
          throw error;
        }));
    return {
      ...common,
      log: new LocalBackendLog(store, { clock, onFatal, report, ...snapshots }),
      pubsub: config.pubsub ?? new LocalPubSub(subscriberFailed),
      presence: new LocalPresence(),
      attempts: new LocalPairingAttempts(attemptsKeepMs),
      ownership: new SoleOwnership(),
    };
  }
  const log = new SharedBackendLog(store, {
    clock,
    report,
    ...snapshots,
    ...(config.maxQueuedDecisions === undefined ? {} : { maxQueued: config.maxQueuedDecisions }),
    ...(config.lookEveryMs === undefined ? {} : { lookEveryMs: config.lookEveryMs }),
    ...(appending === undefined ? {} : { appending }),
  });
  // Folds the whole log for now; the log partitioned by integration (issue 25) folds only the integration's part.
  const caughtUp = (_integrationId: string) => inBackground(log.caughtUp(), report, { what: 'folding what other nodes committed' });
  return {
    ...common,
    log,
    pubsub: broker === undefined ? new LocalPubSub(subscriberFailed) : new ClusterChannel(broker, caughtUp, subscriberFailed),
    presence: new PgPresence(store.connections),
    attempts: new PgPairingAttempts(store.connections, attemptsKeepMs),
    ownership: new SoleOwnership(),
  };
}

/** A failure nobody awaits, when no one said where it goes. */
function warnOf(error: unknown, context: FailureContext): void {
  process.emitWarning(`assistant-relay backend: ${context.what} failed: ${String(error)}`);
}
