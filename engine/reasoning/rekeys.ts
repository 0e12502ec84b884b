/**
 * Key rotation through the backend (PROTOCOL.md 7.12): the client's request and the plugin's answer, carried
 * in the integration's partition and judged by neither the backend nor this module: the two sides check
 * each other's MACs. A request again is a duplicate, another with the same id a conflict; a new one
 * replaces the one before once that one is answered or old enough, within the limit on rotations an hour.
 */
import type { RekeyAnswer, RekeyRequest } from '../../protocol/index.js';
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import { nothing, type Decision } from '../../machines/core/decider.js';
import { isRevoked, type Rekey } from '../../machines/reasoning/integration.js';
import { overRekeys, type OverQuota, type Quotas } from '../../machines/reasoning/quotas.js';
import type { Clock } from '../core/clock.js';
import type { BackendLog } from './backend-log.js';
import type { BackendProjection } from './projection.js';

export interface RekeyParts {
  readonly projection: BackendProjection;
  readonly log: BackendLog<unknown>;
  readonly clock: Clock;
  readonly quotas: Pick<Quotas, 'maxRekeysPerHour' | 'rekeyReplaceAfterMs'>;
}

export class BackendRekeys {
  constructor(private readonly parts: RekeyParts) {}

  /**
   * The client asks to rotate the pairing's keys (PROTOCOL.md 7.12): the backend carries the request to
   * the plugin and cannot judge it. The same request again is a duplicate; another with the same id a
   * conflict; a new one replaces the one before, once that one is answered or old enough, and within
   * the limit on rotations an hour (`OverQuota` otherwise, nothing logged).
   */
  async request(
    integrationId: string,
    request: RekeyRequest,
  ): Promise<
    | { readonly outcome: 'requested' | 'duplicate' | 'conflict' | 'unknown'; readonly rekey?: Rekey }
    | { readonly outcome: 'over_quota'; readonly quota: OverQuota }
  > {
    const at = this.parts.clock.now();
    const outcome = await this.parts.log.decide(
      integrationId,
      (): Decision<BackendEvent, 'requested' | 'duplicate' | 'conflict' | 'unknown' | OverQuota> => {
        const integration = this.parts.projection.integration(integrationId);
        if (integration === undefined || isRevoked(integration)) return nothing('unknown');
        const { rekey } = integration.context;
        if (rekey?.rekey_id === request.rekey_id) {
          const same = rekey.kid === request.kid && rekey.client_key === request.client_key && rekey.mac === request.mac;
          return nothing(same ? 'duplicate' : 'conflict');
        }
        const over = overRekeys(integration, this.parts.quotas, at);
        if (over !== undefined) return nothing(over);
        return { events: [{ type: 'integration.rekey_requested', integration_id: integrationId, ...request, at }], outcome: 'requested' };
      },
    );
    if (typeof outcome === 'object') return { outcome: 'over_quota', quota: outcome };
    const rekey = this.parts.projection.integration(integrationId)?.context.rekey;
    return outcome === 'unknown' || rekey === undefined ? { outcome: 'unknown' } : { outcome, rekey };
  }

  /** The plugin answers the integration's latest rotation; the same answer again is a duplicate, another a conflict. */
  async answer(integrationId: string, rekeyId: string, answer: RekeyAnswer): Promise<'answered' | 'duplicate' | 'conflict' | 'unknown'> {
    const at = this.parts.clock.now();
    return this.parts.log.decide(integrationId, () => {
      const integration = this.parts.projection.integration(integrationId);
      const rekey = integration === undefined || isRevoked(integration) ? undefined : integration.context.rekey;
      if (rekey?.rekey_id !== rekeyId) return nothing('unknown' as const);
      if (rekey.answer !== undefined)
        return nothing(
          rekey.answer.assistant_key === answer.assistant_key && rekey.answer.mac === answer.mac
            ? ('duplicate' as const)
            : ('conflict' as const),
        );
      return {
        events: [{ type: 'integration.rekey_answered', integration_id: integrationId, rekey_id: rekeyId, ...answer, at }],
        outcome: 'answered' as const,
      };
    });
  }
}
