/**
 * The backend's side of pairing (5, PROTOCOL.md 7): it carries the two sides' messages in the one order
 * the protocol allows and keeps them in its log, and when the assistant's confirmation comes it creates
 * the integration with the two tokens it issued, keeping only their digests and the two public keys. It
 * holds no secret of the pairing and could not check one: the code's secret never reaches it, and the
 * sides check each other's confirmations.
 *
 * Bounds (pairing-limits.ts; a start's: pairing-start.ts): open pairings, starts and codes that name no
 * pairing, each per source, and open pairings in all; an open pairing expires after `ttlMs`. With the
 * `ticket` policy a start must use up a ticket the operator issued (`issueTicket`); tickets expire, and
 * there are at most so many unused.
 */
import { newTicket, newToken, tokenDigest, matchesDigest, type PairingStartBody } from '../../protocol/index.js';
import { isPairingEvent, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { nothing, type Decision } from '../../machines/core/decider.js';
import { pairingDecider, type PairingCommand, type PairingOutcome } from '../../machines/reasoning/pairing-decider.js';
import { isRevoked } from '../../machines/reasoning/integration.js';
import { isPairingOpen, type PairingSnapshot } from '../../machines/reasoning/pairing.js';
import { secondsUntil, windowFull } from '../../machines/reasoning/quotas.js';
import type { Clock, IdSource } from '../core/clock.js';
import { Deadlines } from '../core/deadlines.js';
import type { BackendLog } from './backend-log.js';
import type { PairingLimits, PairingPolicy, PairingRefusal } from './pairing-limits.js';
import { startPairing, type PairingStartParts } from './pairing-start.js';
import type { PairingAttempts } from './presence.js';
import type { BackendProjection } from './projection.js';
import { SERVICE_PARTITION } from '../../storage/partitions.js';

export const PAIRING_TTL_MS = 10 * 60_000;

export type PairingRole = 'client' | 'assistant';

/** What a step answers: its outcome, the pairing after it, and a token issued with it. */
export interface PairingAnswer {
  readonly outcome: PairingOutcome;
  readonly pairing: PairingSnapshot | undefined;
  readonly token?: string;
}

export interface PairingsOptions extends PairingStartParts {
  readonly onExpiryFailure: (work: Promise<unknown>) => void;
}

export class Pairings {
  private readonly expiries: Deadlines<string>;
  private readonly projection: BackendProjection;
  private readonly log: BackendLog<unknown>;
  private readonly clock: Clock;
  private readonly ids: IdSource;
  readonly policy: PairingPolicy;
  readonly limits: PairingLimits;
  private readonly attempts: PairingAttempts;

  constructor(private readonly options: PairingsOptions) {
    ({
      projection: this.projection,
      log: this.log,
      clock: this.clock,
      ids: this.ids,
      policy: this.policy,
      limits: this.limits,
      attempts: this.attempts,
    } = options);
    const { clock } = options;
    this.expiries = new Deadlines(clock, (pairing_id) =>
      options.onExpiryFailure(this.decide({ type: 'expire', pairing_id, at: clock.now() })),
    );
  }

  /** After the fold: every open pairing's expiry. */
  rearm(): void {
    for (const pairing of this.projection.openPairings()) this.expiries.set(pairing.context.pairing_id, pairing.context.expires_at);
  }

  /** A committed pairing event (this node's or another's): every node keeps every open pairing's expiry, so that one outlives the node that started it. */
  committed(event: BackendEvent): void {
    if (!isPairingEvent(event)) return;
    const { pairing_id } = event;
    const pairing = this.projection.pairing(pairing_id);
    if (pairing !== undefined && isPairingOpen(pairing)) this.expiries.set(pairing_id, pairing.context.expires_at);
    else this.expiries.delete(pairing_id);
  }

  stop(): void {
    this.expiries.stop();
  }

  /**
   * The client starts a pairing from `source`; the handle goes into its code, the token carries its later
   * messages. Refused past the source's limits, and, with the `ticket` policy, without an unused ticket (pairing-start.ts).
   */
  async start(
    body: PairingStartBody,
    source: string,
  ): Promise<{ readonly pairing: PairingSnapshot; readonly token: string } | PairingRefusal> {
    const started = await startPairing(this.options, body, source);
    if ('pairing' in started) this.expiries.set(started.pairing.context.pairing_id, started.pairing.context.expires_at);
    return started;
  }

  /** The assistant's side joins from `source` with a handle; codes that name no pairing are counted against their source. */
  async join(handle: string, source: string): Promise<PairingAnswer | PairingRefusal> {
    const at = this.clock.now();
    const { limits } = this;
    const misses = await this.attempts.since('unknown_handle', source, at - limits.missWindowMs);
    const wait = windowFull(misses, limits.missesPerSource, limits.missWindowMs, at);
    if (wait !== undefined)
      return {
        refused: 'too_many_attempts',
        message: `this source sent ${misses.length} codes in a minute that named no pairing, the most it may`,
        retryAfterS: wait,
      };
    const token = newToken();
    const joined = await this.log.decide(SERVICE_PARTITION, () => {
      const pairing = this.projection.pairingByHandle(handle);
      if (pairing === undefined) return nothing(undefined);
      const { pairing_id } = pairing.context;
      const decision = pairingDecider.decide({ type: 'join', pairing_id, assistant_pairing_token_digest: tokenDigest(token), at }, pairing);
      return { events: decision.events, outcome: { pairing_id, outcome: decision.outcome } };
    });
    if (joined === undefined) {
      await this.attempts.record('unknown_handle', source, at);
      return { outcome: 'unknown', pairing: undefined };
    }
    const { pairing_id, outcome } = joined;
    return { outcome, pairing: this.projection.pairing(pairing_id), ...(outcome === 'joined' ? { token } : {}) };
  }

  /** The operator issues a ticket for one pairing (`--pairing ticket`), valid for `ttlMs`; refused while the most unused ones are live. */
  async issueTicket(ttlMs: number): Promise<{ readonly ticket: string; readonly expires_at: number } | PairingRefusal> {
    const ticket = newTicket();
    const at = this.clock.now();
    const expires_at = at + ttlMs;
    return this.log.decide(
      SERVICE_PARTITION,
      (): Decision<BackendEvent, { readonly ticket: string; readonly expires_at: number } | PairingRefusal> => {
        const live = this.projection.liveTickets(at);
        if (live.length >= this.limits.tickets)
          return nothing({ refused: 'too_many_tickets', retryAfterS: secondsUntil(Math.min(...live), at) });
        return {
          events: [{ type: 'pairing_ticket.issued', ticket_digest: tokenDigest(ticket), expires_at, at }],
          outcome: { ticket, expires_at },
        };
      },
    );
  }

  /** Which side `token` is of the pairing, if either (constant time). */
  roleOf(pairingId: string, token: string): PairingRole | undefined {
    const pairing = this.projection.pairing(pairingId);
    if (pairing === undefined) return undefined;
    if (matchesDigest(token, pairing.context.client_pairing_token_digest)) return 'client';
    const assistant = pairing.context.assistant_pairing_token_digest;
    return assistant !== undefined && matchesDigest(token, assistant) ? 'assistant' : undefined;
  }

  pairing(pairingId: string): PairingSnapshot | undefined {
    return this.projection.pairing(pairingId);
  }

  /** The pairing as the log holds it. */
  async committedPairing(pairingId: string): Promise<PairingSnapshot | undefined> {
    await this.log.settled();
    return this.projection.pairing(pairingId);
  }

  async commit(pairing_id: string, commitment: string): Promise<PairingAnswer> {
    return this.step({ type: 'commit', pairing_id, commitment, at: this.clock.now() });
  }

  async sendClientKey(pairing_id: string, client_key: string): Promise<PairingAnswer> {
    return this.step({ type: 'send_client_key', pairing_id, client_key, at: this.clock.now() });
  }

  async reveal(pairing_id: string, assistant_key: string, nonce: string): Promise<PairingAnswer> {
    return this.step({ type: 'reveal', pairing_id, assistant_key, nonce, at: this.clock.now() });
  }

  async abort(pairing_id: string, by: PairingRole, reason: string): Promise<PairingAnswer> {
    return this.step({ type: 'abort', pairing_id, by, reason, at: this.clock.now() });
  }

  /**
   * The client's confirmation: answered with its client token for the integration. Asked again (its
   * answer was lost) before the pairing's expiry, with the same confirmation: a fresh token, the old one
   * stops working.
   */
  async confirmClient(pairing_id: string, confirmation: string): Promise<PairingAnswer> {
    const token = newToken();
    const at = this.clock.now();
    const answer = await this.step({ type: 'confirm_client', pairing_id, confirmation, client_token_digest: tokenDigest(token), at });
    if (answer.outcome === 'client_confirmed') return { ...answer, token };
    if (answer.outcome === 'duplicate') return this.reissue(answer.pairing!, 'client', token, at);
    return answer;
  }

  /** The assistant's confirmation completes the pairing: the integration exists, with its two tokens. Asked again: as for the client's. */
  async complete(pairing_id: string, confirmation: string): Promise<PairingAnswer> {
    const token = newToken();
    const at = this.clock.now();
    const answer = await this.step({ type: 'complete', pairing_id, confirmation, integration_id: this.ids.uuid(), at }, (events) => {
      const completed = events.find((event) => event.type === 'pairing.completed');
      if (completed === undefined) return events;
      const { context } = this.projection.pairing(pairing_id)!;
      return [
        ...events,
        {
          type: 'integration.created',
          integration_id: completed.integration_id,
          provider_kind: context.provider_kind,
          relay_token_digest: tokenDigest(token),
          client_token_digest: context.client_token_digest!,
          pairing: { pairing_id, client_key: context.client_key!, assistant_key: context.assistant_key! },
          at,
        },
      ];
    });
    if (answer.outcome === 'completed') return { ...answer, token };
    if (answer.outcome === 'duplicate') return this.reissue(answer.pairing!, 'relay', token, at);
    return answer;
  }

  /** A confirmation asked again after the pairing completed: a fresh token of that role, until the pairing's expiry. */
  private async reissue(pairing: PairingSnapshot, role: 'client' | 'relay', token: string, at: number): Promise<PairingAnswer> {
    const integration_id = pairing.context.integration_id!;
    if (at >= pairing.context.expires_at) return { outcome: 'ended', pairing };
    // Its integration revoked since (or, with a retention shorter than a pairing's life, forgotten): no token.
    const reissued = await this.log.decide(integration_id, () => {
      const integration = this.projection.integration(integration_id);
      if (integration === undefined || isRevoked(integration)) return nothing(false);
      return { events: [{ type: 'integration.token_rotated', integration_id, role, token_digest: tokenDigest(token), at }], outcome: true };
    });
    return reissued ? { outcome: 'duplicate', pairing, token } : { outcome: 'ended', pairing };
  }

  private async step(
    command: Exclude<PairingCommand, { type: 'start' }>,
    also?: (events: readonly BackendEvent[]) => readonly BackendEvent[],
  ): Promise<PairingAnswer> {
    const outcome = await this.decide(command, also);
    const pairing = this.projection.pairing(command.pairing_id);
    if (pairing !== undefined && !isPairingOpen(pairing)) this.expiries.delete(command.pairing_id);
    return { outcome, pairing };
  }

  private decide(
    command: PairingCommand,
    also: (events: readonly BackendEvent[]) => readonly BackendEvent[] = (events) => events,
  ): Promise<PairingOutcome> {
    return this.log.decide(SERVICE_PARTITION, () => {
      const decision = pairingDecider.decide(command, this.projection.pairing(command.pairing_id));
      return { events: also(decision.events), outcome: decision.outcome };
    });
  }
}
