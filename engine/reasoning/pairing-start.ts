/**
 * A pairing's start (PROTOCOL.md 7.8): the one pairing request anyone who reaches the backend may send, so
 * the bounds are held here. A start is refused for a provider the backend does not take, without a usable
 * ticket under the `ticket` policy, past its source's starts in their window, and past the open pairings
 * its source, or the whole backend, may hold; it is refused before anything is logged.
 */
import { crockfordRandom, HANDLE_LENGTH, newToken, providerOf, tokenDigest, type PairingStartBody } from '../../protocol/index.js';
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import { nothing, type Decision } from '../../machines/core/decider.js';
import { pairingDecider, type PairingCommand } from '../../machines/reasoning/pairing-decider.js';
import type { PairingSnapshot } from '../../machines/reasoning/pairing.js';
import { windowFull } from '../../machines/reasoning/quotas.js';
import type { Clock, IdSource } from '../core/clock.js';
import type { BackendLog } from './backend-log.js';
import { openRefusal, type PairingLimits, type PairingPolicy, type PairingRefusal } from './pairing-limits.js';
import type { PairingAttempts } from './presence.js';
import type { BackendProjection } from './projection.js';
import { SERVICE_PARTITION } from '../../storage/partitions.js';

/** What a start is decided with and held to. */
export interface PairingStartParts {
  readonly projection: BackendProjection;
  readonly log: BackendLog<unknown>;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly ttlMs: number;
  readonly policy: PairingPolicy;
  readonly limits: PairingLimits;
  /** Each source's starts and codes that named no pairing (shared by the nodes of a service). */
  readonly attempts: PairingAttempts;
}

/** The pairing started from `source`, with the client's pairing token; or why not. */
export async function startPairing(
  parts: PairingStartParts,
  body: PairingStartBody,
  source: string,
): Promise<{ readonly pairing: PairingSnapshot; readonly token: string } | PairingRefusal> {
  const { projection, log, clock, ids, ttlMs, policy, limits, attempts } = parts;
  const provider = providerOf(body.provider_kind);
  if (!provider.ok) return { refused: 'provider_refused', message: provider.error.message };
  if (policy === 'ticket' && body.ticket === undefined) return { refused: 'pairing_ticket_required' };
  const at = clock.now();
  const starts = await attempts.since('start', source, at - limits.startWindowMs);
  const wait = windowFull(starts, limits.startsPerSource, limits.startWindowMs, at);
  if (wait !== undefined)
    return {
      refused: 'too_many_pairing_starts',
      message: `this source started ${starts.length} pairings in ${limits.startWindowMs / 60_000} minutes, the most it may`,
      retryAfterS: wait,
    };
  const token = newToken();
  const pairing_id = ids.uuid();
  // A ticket is used up only where the policy asks for one: a client that always sends one pairs anywhere.
  const ticket_digest = policy === 'ticket' ? tokenDigest(body.ticket!) : undefined;
  const unusable = () => ticket_digest !== undefined && !((projection.ticketExpiry(ticket_digest) ?? 0) > at);
  // Asked first without a decision, so that made-up tickets cost the log nothing; asked again in it, where it counts.
  if (unusable()) return { refused: 'pairing_ticket_invalid' };
  const refused = await log.decide(SERVICE_PARTITION, (): Decision<BackendEvent, PairingRefusal | undefined> => {
    if (unusable()) return nothing({ refused: 'pairing_ticket_invalid' });
    const full = openRefusal(projection.openPairings(), source, limits, at);
    if (full !== undefined) return nothing(full);
    let handle = crockfordRandom(HANDLE_LENGTH);
    while (projection.pairingByHandle(handle) !== undefined) handle = crockfordRandom(HANDLE_LENGTH);
    const command: PairingCommand = {
      type: 'start',
      pairing_id,
      handle,
      provider_kind: body.provider_kind,
      schema_version: body.schema_version,
      envelope_version: body.envelope_version,
      client_pairing_token_digest: tokenDigest(token),
      expires_at: at + ttlMs,
      source,
      ...(ticket_digest === undefined ? {} : { ticket_digest }),
      at,
    };
    return { events: pairingDecider.decide(command, projection.pairing(pairing_id)).events, outcome: undefined };
  });
  if (refused !== undefined) return refused;
  await attempts.record('start', source, at);
  return { pairing: projection.pairing(pairing_id)!, token };
}
