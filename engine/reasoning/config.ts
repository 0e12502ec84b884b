/**
 * The backend relay engine's settings, each with its default. What it reaches the world through (its log,
 * channel, presence, clock) is not among them: those are its seams (seams.ts), which the composition
 * root chooses.
 */
import { MAX_HEARTBEAT_INTERVAL_S } from '../../protocol/index.js';
import type { Quotas } from '../../machines/reasoning/quotas.js';
import type { PairingLimits, PairingPolicy } from './pairing-limits.js';
import type { ResultChecker } from './result-check.js';

export interface ReasoningEngineConfig {
  /** How long a delivered job waits for its plugin to say it runs it, and how long a running job's lease lasts between heartbeats. Default 90 s; at least two heartbeat intervals, at most an hour (`livenessOf`). */
  readonly leaseMs?: number;
  /** The heartbeat interval plugins are told in each answer (`interval_s`). Default 30 s (2.3); whole seconds, 1 s to 10 minutes. */
  readonly heartbeatIntervalMs?: number;
  /** An integration is shown offline after this many intervals without a heartbeat. Default 3; 1 to 100. */
  readonly missedHeartbeats?: number;
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
export const DEFAULT_MISSED_HEARTBEATS = 3;
export const MAX_MISSED_HEARTBEATS = 100;
export const MAX_LEASE_MS = 3_600_000;
/** A comment line on every stream this often, so that proxies keep an idle one open. */
export const DEFAULT_KEEPALIVE_MS = 20_000;
/** The capability profile's default `max_payload_bytes`: what a plugin takes unless it says otherwise. */
export const DEFAULT_MAX_JOB_BYTES = 1024 * 1024;

/** How soon the backend finds a plugin gone (PROTOCOL.md 6e.25): its heartbeat interval, the heartbeats it may miss, and the delivery lease. */
export interface Liveness {
  readonly heartbeatIntervalMs: number;
  readonly missedHeartbeats: number;
  readonly leaseMs: number;
}

/** The liveness settings given over the defaults; refused (RangeError, naming the setting and its flag) when one cannot work. */
export function livenessOf(config: Pick<ReasoningEngineConfig, keyof Liveness>): Liveness {
  const { heartbeatIntervalMs = HEARTBEAT_INTERVAL_MS, missedHeartbeats = DEFAULT_MISSED_HEARTBEATS, leaseMs = DEFAULT_LEASE_MS } = config;
  // Whole seconds: the heartbeat answer says the interval in seconds, and the backend must count what it says.
  if (!(
    Number.isSafeInteger(heartbeatIntervalMs / 1000) &&
    heartbeatIntervalMs >= 1000 &&
    heartbeatIntervalMs <= MAX_HEARTBEAT_INTERVAL_S * 1000
  ))
    throw new RangeError(
      `the heartbeat interval (heartbeatIntervalMs, --heartbeat-interval) must be whole seconds from 1s to ${MAX_HEARTBEAT_INTERVAL_S}s`,
    );
  if (!(Number.isSafeInteger(missedHeartbeats) && missedHeartbeats >= 1 && missedHeartbeats <= MAX_MISSED_HEARTBEATS))
    throw new RangeError(
      `the missed heartbeats (missedHeartbeats, --missed-heartbeats) must be a whole number from 1 to ${MAX_MISSED_HEARTBEATS}`,
    );
  // Heartbeats renew a running job's lease: under two intervals, one heartbeat lost would give a running job to another plugin.
  if (!(leaseMs >= 2 * heartbeatIntervalMs && leaseMs <= MAX_LEASE_MS))
    throw new RangeError(
      `the delivery lease (leaseMs, --delivery-lease) must be from two heartbeat intervals (${2 * heartbeatIntervalMs}ms) to an hour (${MAX_LEASE_MS}ms)`,
    );
  return { heartbeatIntervalMs, missedHeartbeats, leaseMs };
}
