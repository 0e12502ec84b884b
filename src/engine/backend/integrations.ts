/**
 * The backend's integrations: created for a provider of the registry with two tokens kept as digests,
 * authenticated in constant time, and followed by their heartbeats (2.3): online until three intervals
 * pass without one, what their plugin says of itself logged when it is news, refused when their provider
 * does not admit the plugin's versions.
 */
import { randomUUID } from 'node:crypto';
import { matchesDigest, newToken, providerOf, tokenDigest, type CodedError, type Heartbeat, type HeartbeatAnswer, type RekeyAnswer, type RekeyRequest } from '../../protocol/index.js';
import type { BackendEvent, IntegrationEvent } from '../../machines/backend-events.js';
import { isOnline, isRevoked, type IntegrationSnapshot, type Rekey } from '../../machines/integration.js';
import type { Appender } from '../append.js';
import type { Clock } from '../clock.js';
import { Deadlines } from '../deadlines.js';
import { MISSED_HEARTBEATS, refusalOf, seenOf } from './heartbeats.js';
import type { BackendProjection } from './projection.js';

/** What `create` hands the operator, once: the tokens are kept only as digests. */
export interface NewIntegration {
  readonly integration_id: string;
  readonly provider_kind: string;
  readonly relay_token: string;
  readonly client_token: string;
}

export class Integrations {
  /** When each online integration goes offline if no heartbeat comes. */
  private readonly presence: Deadlines<string>;

  constructor(
    private readonly projection: BackendProjection,
    private readonly appender: Appender<BackendEvent>,
    private readonly clock: Clock,
    private readonly heartbeatIntervalMs: number,
    /** Renews the leases of the jobs a heartbeat names as running (those of another integration are not touched). */
    private readonly renew: (integrationId: string, jobIds: readonly string[], at: number) => Promise<unknown>,
    onOfflineFailure: (work: Promise<unknown>) => void,
  ) {
    this.presence = new Deadlines(clock, (integration_id) =>
      onOfflineFailure(this.appendIf(this.projection.integration(integration_id), { type: 'integration.offline', integration_id, at: clock.now() })),
    );
  }

  /** After the fold: heartbeats are not logged one by one, so an integration online when the backend stopped gets a full grace from now. */
  rearm(): void {
    for (const id of this.projection.integrationIds()) {
      if (isOnline(this.projection.integration(id)!)) this.presence.set(id, this.clock.now() + MISSED_HEARTBEATS * this.heartbeatIntervalMs);
    }
  }

  stop(): void {
    this.presence.stop();
  }

  /** Creates an integration for a provider of the registry; an unknown or coming-soon provider is refused (6c). */
  async create(providerKind: string): Promise<NewIntegration | { readonly refused: CodedError }> {
    const provider = providerOf(providerKind);
    if (!provider.ok) return { refused: provider.error };
    const relay_token = newToken();
    const client_token = newToken();
    const integration_id = randomUUID();
    await this.appender.append([
      {
        type: 'integration.created',
        integration_id,
        provider_kind: providerKind,
        relay_token_digest: tokenDigest(relay_token),
        client_token_digest: tokenDigest(client_token),
        at: this.clock.now(),
      },
    ]);
    return { integration_id, provider_kind: providerKind, relay_token, client_token };
  }

  integration(integrationId: string): IntegrationSnapshot | undefined {
    return this.projection.integration(integrationId);
  }

  /** A fresh token for one role, handed out this once; the old one stops working as the new digest is logged. */
  async rotate(integrationId: string, role: 'relay' | 'client'): Promise<{ readonly token: string } | { readonly refused: 'integration_not_found' | 'integration_revoked' }> {
    const integration = this.projection.integration(integrationId);
    if (integration === undefined) return { refused: 'integration_not_found' };
    if (isRevoked(integration)) return { refused: 'integration_revoked' };
    const token = newToken();
    await this.appender.append([{ type: 'integration.token_rotated', integration_id: integrationId, role, token_digest: tokenDigest(token), at: this.clock.now() }]);
    return { token };
  }

  /** Revokes the integration: both its tokens stop working, for good. Revoking it again changes nothing. */
  async revoke(integrationId: string): Promise<IntegrationSnapshot | undefined> {
    const integration = this.projection.integration(integrationId);
    if (integration === undefined) return undefined;
    if (!isRevoked(integration)) {
      this.presence.delete(integrationId);
      await this.appender.append([{ type: 'integration.revoked', integration_id: integrationId, at: this.clock.now() }]);
    }
    return this.projection.integration(integrationId);
  }

  /** Whether `token` is the integration's current token of that role (constant time; a revoked integration has none). */
  authenticates(integrationId: string, role: 'relay' | 'client', token: string): boolean {
    const integration = this.projection.integration(integrationId);
    if (integration === undefined || isRevoked(integration)) return false;
    const { relay_token_digest, client_token_digest } = integration.context;
    return matchesDigest(token, role === 'relay' ? relay_token_digest : client_token_digest);
  }

  /**
   * A heartbeat (2.3): the integration is online until three intervals pass without one; what its plugin
   * says of itself is logged when it is news; the jobs it names as running keep their leases. The answer
   * says whether the plugin is refused (its versions, its provider) and when to send the next one.
   */
  async heartbeat(integrationId: string, heartbeat: Heartbeat): Promise<HeartbeatAnswer | undefined> {
    const integration = this.projection.integration(integrationId);
    if (integration === undefined || isRevoked(integration)) return undefined;
    const at = this.clock.now();
    const refused = refusalOf(integration, heartbeat);
    const seen = seenOf(integration, heartbeat, refused, at);
    this.presence.set(integrationId, at + MISSED_HEARTBEATS * this.heartbeatIntervalMs);
    const renewals = refused === undefined ? heartbeat.running_job_ids : [];
    await Promise.all([...(seen === undefined ? [] : [this.appender.append([seen])]), this.renew(integrationId, renewals, at)]);
    return {
      ok: true,
      interval_s: Math.max(1, Math.round(this.heartbeatIntervalMs / 1000)),
      ...(refused === undefined ? {} : { refused }),
      probe_requested: false,
    };
  }

  /**
   * The client asks to rotate the pairing's keys (PROTOCOL.md 7.12): the backend carries the request to
   * the plugin and cannot judge it. The same request again is a duplicate; another with the same id a
   * conflict; a new one replaces the one before, answered or not.
   */
  async requestRekey(integrationId: string, request: RekeyRequest): Promise<{ readonly outcome: 'requested' | 'duplicate' | 'conflict' | 'unknown'; readonly rekey?: Rekey }> {
    const integration = this.projection.integration(integrationId);
    if (integration === undefined || isRevoked(integration)) return { outcome: 'unknown' };
    const { rekey } = integration.context;
    if (rekey?.rekey_id === request.rekey_id) {
      const same = rekey.kid === request.kid && rekey.client_key === request.client_key && rekey.mac === request.mac;
      return { outcome: same ? 'duplicate' : 'conflict', rekey };
    }
    await this.appender.append([{ type: 'integration.rekey_requested', integration_id: integrationId, ...request, at: this.clock.now() }]);
    return { outcome: 'requested', rekey: this.projection.integration(integrationId)!.context.rekey! };
  }

  /** The plugin answers the integration's latest rotation; the same answer again is a duplicate, another a conflict. */
  async answerRekey(integrationId: string, rekeyId: string, answer: RekeyAnswer): Promise<'answered' | 'duplicate' | 'conflict' | 'unknown'> {
    const integration = this.projection.integration(integrationId);
    const rekey = integration === undefined || isRevoked(integration) ? undefined : integration.context.rekey;
    if (rekey?.rekey_id !== rekeyId) return 'unknown';
    if (rekey.answer !== undefined) return rekey.answer.assistant_key === answer.assistant_key && rekey.answer.mac === answer.mac ? 'duplicate' : 'conflict';
    await this.appender.append([{ type: 'integration.rekey_answered', integration_id: integrationId, rekey_id: rekeyId, ...answer, at: this.clock.now() }]);
    return 'answered';
  }

  /** Appends an integration event while the integration is still there to take it. */
  private async appendIf(integration: IntegrationSnapshot | undefined, event: IntegrationEvent): Promise<void> {
    if (integration === undefined || isRevoked(integration)) return;
    await this.appender.append([event]);
  }

}
