/**
 * `assistant-relay backend`'s liveness flags (PROTOCOL.md 6e.25): the heartbeat interval plugins are told,
 * the heartbeats an integration may miss before it shows offline, the delivery lease, and, on a shared
 * store, the lease by which a node owns integrations. Each is read
 * into the engine's setting; the engine's bounds (`livenessOf`) refuse a bad one as a usage error.
 */
import { DEFAULT_MISSED_HEARTBEATS, livenessOf, MAX_MISSED_HEARTBEATS, type Liveness } from '../../engine/reasoning/config.js';
import { integer, parseDuration, UsageError } from './flags.js';

export const LIVENESS_USAGE = `  --heartbeat-interval D   the interval plugins are told to heartbeat at (in each heartbeat's answer), in
                           whole seconds from 1s to 10m (default 30s)
  --missed-heartbeats N    an integration shows offline after N intervals without a heartbeat (default
                           ${DEFAULT_MISSED_HEARTBEATS}, at most ${MAX_MISSED_HEARTBEATS})
  --delivery-lease D       a delivered job waits D for its plugin to run it, and a running job's lease lasts
                           D from each heartbeat; then it goes to another delivery (default 90s; from two
                           heartbeat intervals to 1h)
  --ownership-lease D      with --store: a node's lease on the integrations it owns (their timers and
                           streams); a dead node's are taken over within about D (default 3s, 1s to 1m)`;

export const LIVENESS_FLAGS = {
  'heartbeat-interval': { type: 'string' },
  'missed-heartbeats': { type: 'string' },
  'delivery-lease': { type: 'string' },
  'ownership-lease': { type: 'string' },
} as const;

/** The liveness settings the flags give, with the defaults for the others; a bad one is a `UsageError`. */
export function livenessFlags(
  get: (flag: keyof typeof LIVENESS_FLAGS) => string | undefined,
): Liveness & { readonly ownershipLeaseMs?: number } {
  const ownership = get('ownership-lease');
  const ownershipLeaseMs = ownership === undefined ? undefined : parseDuration('ownership-lease', ownership);
  if (ownershipLeaseMs !== undefined && (ownershipLeaseMs < 1_000 || ownershipLeaseMs > 60_000))
    throw new UsageError('--ownership-lease must be from 1s to 1m');
  const interval = get('heartbeat-interval');
  const missed = get('missed-heartbeats');
  const lease = get('delivery-lease');
  try {
    const liveness = livenessOf({
      ...(interval === undefined ? {} : { heartbeatIntervalMs: parseDuration('heartbeat-interval', interval) }),
      ...(missed === undefined ? {} : { missedHeartbeats: integer('missed-heartbeats', missed, 1, MAX_MISSED_HEARTBEATS) }),
      ...(lease === undefined ? {} : { leaseMs: parseDuration('delivery-lease', lease) }),
    });
    return ownershipLeaseMs === undefined ? liveness : { ...liveness, ownershipLeaseMs };
  } catch (error) {
    throw error instanceof RangeError ? new UsageError(error.message) : error;
  }
}
