/**
 * The backend relay's seams, chosen here for its engine (engine/reasoning/seams.ts), which chooses none:
 * on an SQLite log of this process, its log, a channel, presence and pairing attempts in memory, and
 * every integration its own; on a PostgreSQL log several nodes share, the log partitioned by integration,
 * presence and attempts in PostgreSQL, ownership by leases, and a channel over the broker when there is
 * one (without one, nodes learn of each other's commits at their next look).
 */
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import { randomIds, systemClock, type Clock, type IdSource } from '../../engine/core/clock.js';
import { inBackground, type FailureContext } from '../../engine/core/failures.js';
import { LocalBackendLog } from '../../engine/reasoning/backend-log.js';
import { ClusterChannel } from '../../engine/reasoning/channel.js';
import type { ReasoningEngineConfig } from '../../engine/reasoning/config.js';
import { attemptsKeptFor, pairingLimitsOf } from '../../engine/reasoning/pairing-limits.js';
import { LeasedOwnership, SoleOwnership } from '../../engine/reasoning/ownership.js';
import { PartitionedBackendLog } from '../../engine/reasoning/partitioned-log.js';
import { LocalPairingAttempts, LocalPresence } from '../../engine/reasoning/presence.js';
import { LocalPubSub, type PubSub } from '../../engine/reasoning/pubsub.js';
import type { BackendSeams } from '../../engine/reasoning/seams.js';
import { EventLog } from '../../storage/event-log.js';
import type { PgPartitionedLog } from '../../storage/postgres/partitioned-log.js';
import { PgPairingAttempts, PgPresence } from '../../storage/postgres/presence.js';

/** Where the backend keeps its log: an embedded SQLite file, or PostgreSQL shared by several nodes. */
export type BackendStore = EventLog<BackendEvent> | PgPartitionedLog<BackendEvent>;

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
  /** Committed events between two snapshots of the fold (engine/core/snapshots.ts), or of one partition's on a shared log. Default 50,000; 1,000 a partition. */
  readonly snapshotEveryEvents?: number;
  /** On a shared log: integrations' partitions a node holds at most beyond those in use (partition-holds.ts). Default 10,000. */
  readonly maxHeldIntegrations?: number;
  /** On a shared log: how long a node's lease on an integration lasts unless renewed (ownership.ts). Default 3 s. */
  readonly ownershipLeaseMs?: number;
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
  const ids = config.ids ?? randomIds;
  const node = ids.token();
  const common = { clock, ids, node, report };
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
  // Leases run on the database's clock, so they are renewed by the real one whatever clock the engine keeps.
  const ownership = new LeasedOwnership(store, node, systemClock, report, {
    ...(config.ownershipLeaseMs === undefined ? {} : { leaseMs: config.ownershipLeaseMs }),
  });
  const log = new PartitionedBackendLog(store, {
    node,
    clock,
    ownership,
    report,
    ...(config.snapshotEveryEvents === undefined ? {} : { snapshotEveryEvents: config.snapshotEveryEvents }),
    ...(config.maxQueuedDecisions === undefined ? {} : { maxQueued: config.maxQueuedDecisions }),
    ...(config.lookEveryMs === undefined ? {} : { lookEveryMs: config.lookEveryMs }),
    ...(config.maxHeldIntegrations === undefined ? {} : { maxHeld: config.maxHeldIntegrations }),
    ...(appending === undefined ? {} : { appending }),
  });
  const wake = (integrationId: string) => inBackground(log.caughtUp(integrationId), report, { what: 'folding what other nodes committed' });
  return {
    ...common,
    log,
    pubsub: broker === undefined ? new LocalPubSub(subscriberFailed) : new ClusterChannel(broker, node, wake, subscriberFailed),
    presence: new PgPresence(store.connections),
    attempts: new PgPairingAttempts(store.connections, attemptsKeepMs),
    ownership,
  };
}

/** A failure nobody awaits, when no one said where it goes. */
function warnOf(error: unknown, context: FailureContext): void {
  process.emitWarning(`assistant-relay backend: ${context.what} failed: ${String(error)}`);
}
