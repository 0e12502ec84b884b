/**
 * The backend relay engine's settings, each with its default. What it reaches the world through (its log,
 * channel, presence, clock) is not among them: those are its seams (seams.ts), which the composition
 * root chooses.
 */
import type { Quotas } from '../../machines/reasoning/quotas.js';
import type { PairingLimits, PairingPolicy } from './pairing-limits.js';
import type { ResultChecker } from './result-check.js';

export interface ReasoningEngineConfig {
  /** How long a delivered job waits for its plugin to say it runs it, and how long a running job's lease lasts between heartbeats. Default 90 s: three heartbeats. */
  readonly leaseMs?: number;
  /** The heartbeat interval plugins are told (30 s, 2.3); three missed show an integration offline. */
  readonly heartbeatIntervalMs?: number;
  readonly keepaliveMs?: number;
  /** How long an open pairing waits for its next message before it expires. Default 10 minutes. */
  readonly pairingTtlMs?: number;
  /** Who may create an integration by pairing (PROTOCOL.md 7.8): `ticket` (the default), only a start with a ticket the operator issued; `open`, anyone who reaches the backend. */
  readonly pairing?: PairingPolicy;
  /** What one source may do with pairings, and open pairings in all (pairing-limits.ts; defaults in PROTOCOL.md 7.8). */
  readonly pairingLimits?: Partial<PairingLimits>;
  /** Jobs settled, integrations revoked and pairings ended longer ago than this are forgotten and their events removed (engine/retention.ts). Default 7 days; `Infinity` keeps everything. */
  readonly retentionMs?: number;
  /** What one integration may make the backend hold or log (machines/quotas.ts has the defaults). */
  readonly quotas?: Partial<Quotas>;
  /** Pairings are forgotten this long after their expiry, once ended, if that is sooner than `retentionMs` (backend/retention.ts). Default 1 hour. */
  readonly pairingRetentionMs?: number;
  /** A job's payload, and its result, at most this many bytes of compact JSON (a BYO job's: its envelope); past it, 413. Default 1 MiB. */
  readonly maxJobBytes?: number;
  /** Checks a plain result against its job's schema (PROTOCOL.md 6.12); default: at once, on this thread. `createBackendRelay` gives one that runs costly checks in worker threads. */
  readonly resultChecker?: ResultChecker;
}

export const DEFAULT_LEASE_MS = 90_000;
export const HEARTBEAT_INTERVAL_MS = 30_000;
/** A comment line on every stream this often, so that proxies keep an idle one open. */
export const DEFAULT_KEEPALIVE_MS = 20_000;
/** The capability profile's default `max_payload_bytes`: what a plugin takes unless it says otherwise. */
export const DEFAULT_MAX_JOB_BYTES = 1024 * 1024;
