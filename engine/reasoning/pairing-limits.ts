/**
 * What one source may do with pairings (PROTOCOL.md 7.8), and who may pair at all: each limit is a
 * source's (an IPv4 address, or an IPv6 /64), so that no source can use up what another needs; the one
 * limit of the whole service, on open pairings, bounds memory and is far above any one source's. A
 * refusal says when to try again: when the oldest thing that counts against the limit stops counting.
 */
import type { PairingSnapshot } from '../../machines/reasoning/pairing.js';
import { secondsUntil } from '../../machines/reasoning/quotas.js';

/** Who may create an integration by pairing: anyone who reaches the backend, or whoever holds a ticket the operator issued. */
export type PairingPolicy = 'open' | 'ticket';

export interface PairingLimits {
  /** Open pairings one source may hold at once. */
  readonly openPerSource: number;
  /** Open pairings of all sources at once: a bound on memory that no one source reaches alone. */
  readonly open: number;
  /** Pairings one source may start in `startWindowMs` (a start that was refused does not count). */
  readonly startsPerSource: number;
  readonly startWindowMs: number;
  /** Codes that named no open pairing one source may send in `missWindowMs`. */
  readonly missesPerSource: number;
  readonly missWindowMs: number;
  /** Unused pairing tickets that have not expired, at once. */
  readonly tickets: number;
}

export const DEFAULT_PAIRING_LIMITS: PairingLimits = {
  openPerSource: 8,
  open: 1_024,
  startsPerSource: 10,
  startWindowMs: 10 * 60_000,
  missesPerSource: 10,
  missWindowMs: 60_000,
  tickets: 1_000,
};

/** The limits with `given` over the defaults; refused when one source's share would be the whole. */
export function pairingLimitsOf(given: Partial<PairingLimits> = {}): PairingLimits {
  const limits = { ...DEFAULT_PAIRING_LIMITS, ...given };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`pairingLimits.${name} must be a whole number of at least 1`);
  }
  if (limits.open <= limits.openPerSource)
    throw new TypeError('pairingLimits.open must be more than pairingLimits.openPerSource: one source must not reach it alone');
  return limits;
}

/** How long a source's pairing attempts are kept: as long as one counts against any of its limits. */
export function attemptsKeptFor(limits: PairingLimits): number {
  return Math.max(limits.startWindowMs, limits.missWindowMs);
}

/** A start or a join refused, before anything was logged: its catalogue code, and for a 429 its `Retry-After` in seconds. */
export interface PairingRefusal {
  readonly refused:
    | 'too_many_pairings'
    | 'too_many_pairing_starts'
    | 'too_many_attempts'
    | 'pairing_ticket_required'
    | 'pairing_ticket_invalid'
    | 'too_many_tickets'
    | 'provider_refused';
  readonly message?: string;
  readonly retryAfterS?: number;
}

/** Whether one more pairing may open for `source`, given those open now; if not, why, and when one of those that count will have expired. */
export function openRefusal(
  open: readonly PairingSnapshot[],
  source: string,
  limits: PairingLimits,
  now: number,
): PairingRefusal | undefined {
  const firstExpiry = (pairings: readonly PairingSnapshot[]) =>
    secondsUntil(Math.min(...pairings.map((pairing) => pairing.context.expires_at)), now);
  const own = open.filter((pairing) => pairing.context.source === source);
  if (own.length >= limits.openPerSource) {
    return {
      refused: 'too_many_pairings',
      message: `this source holds ${own.length} open pairings, the most it may`,
      retryAfterS: firstExpiry(own),
    };
  }
  if (open.length >= limits.open)
    return { refused: 'too_many_pairings', message: 'the backend holds the most open pairings it takes', retryAfterS: firstExpiry(open) };
  return undefined;
}
