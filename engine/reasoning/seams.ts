/**
 * What the backend relay's engine reaches the world through. The composition root (adapters/backend/seams.ts)
 * chooses each one and hands them in; the engine reaches its store, the other nodes and the time only
 * through these, so a test hands it in-memory ones. Which store stands behind them shows only in what
 * they can do: a channel that reaches other nodes can `announce` (pubsub.ts).
 */
import type { Clock, IdSource } from '../core/clock.js';
import type { FailureContext } from '../core/failures.js';
import type { BackendLog } from './backend-log.js';
import type { PairingAttempts, Presence } from './presence.js';
import type { BackendState } from './backend-state.js';
import type { Ownership } from './ownership.js';
import type { PubSub } from './pubsub.js';

export interface BackendSeams {
  /** This node, for as long as its process runs (its epoch): the owner a lease names, the holder a stream's takeover logs. */
  readonly node: string;
  /** The log decided against and folded: this process's SQLite (`LocalBackendLog`), or PostgreSQL nodes share, partitioned by integration (`PartitionedBackendLog`). */
  readonly log: BackendLog<BackendState>;
  /** Where each committed change of a job is published for streams and followers (`LocalPubSub`, or `ClusterChannel` over a broker). */
  readonly pubsub: PubSub;
  /** Until when each integration is online, by its newest heartbeat on any node. */
  readonly presence: Presence;
  /** Which integrations this node owns (runs their timers, holds their streams): every one on a log of one process (`SoleOwnership`), leased on a shared store. */
  readonly ownership: Ownership;
  /** Each source's pairing starts and codes that named no pairing (its misses), what the pairing limits count. */
  readonly attempts: PairingAttempts;
  readonly clock: Clock;
  readonly ids: IdSource;
  /** Where a failure nobody awaits goes (a deadline's command, a listener, a snapshot). */
  readonly report: (error: unknown, context: FailureContext) => void;
}
