/**
 * The backend's integrations: created for a provider of the registry with two tokens kept as digests,
 * authenticated in constant time, and followed by their heartbeats (2.3): online until `missedHeartbeats`
 * intervals pass without one (three by default), what their plugin says of itself logged when it is news,
 * refused when their provider does not admit the plugin's versions. Each change is a decision on the log
 * (`BackendLog.decide`), taken against the integration as it stands with everything committed; heartbeats
 * meet in `Presence`, so that any node may take them and every node's offline deadline asks before it
 * goes offline.
 */
import { randomUUID } from 'node:crypto';
import {
  matchesDigest,
  newToken,
  providerOf,
  tokenDigest,
  type CodedError,
  type Heartbeat,
  type HeartbeatAnswer,
} from '../../protocol/index.js';
import { isIntegrationEvent, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { nothing, type Decision } from '../../machines/core/decider.js';
import { isOnline, isRevoked, type IntegrationSnapshot } from '../../machines/reasoning/integration.js';
import { overStatusChanges, type OverQuota, type Quotas } from '../../machines/reasoning/quotas.js';
import type { Clock } from '../core/clock.js';
import { Deadlines } from '../core/deadlines.js';
import { OWNER, type BackendLog } from './backend-log.js';
import type { Liveness } from './config.js';
import { refusalOf, seenOf } from './heartbeats.js';
import type { Presence } from './presence.js';
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
    private readonly log: BackendLog<unknown>,
    private readonly heartbeats: Presence,
    private readonly clock: Clock,
    /** The interval plugins are told, and how many of them pass without a heartbeat before an integration is offline. */
    private readonly liveness: Pick<Liveness, 'heartbeatIntervalMs' | 'missedHeartbeats'>,
    /** Renews the leases of the jobs a heartbeat names as running (those of another integration are not touched). */
    private readonly renew: (integrationId: string, jobIds: readonly string[], at: number) => Promise<unknown>,
    onOfflineFailure: (work: Promise<unknown>) => void,
    /** How often what a plugin says of itself is logged, and how many key rotations are asked for. */
    private readonly quotas: Pick<Quotas, 'statusIntervalMs'>,
    /** Whether this node owns the integration: only its owner keeps its offline deadline. */
    private readonly owns: (integrationId: string) => boolean,
  ) {
    this.presence = new Deadlines(clock, (integration_id) => onOfflineFailure(this.offlineUnlessSeen(integration_id)));
  }

  /** After the fold (a start, or an integration taken over): one online then gets a full grace from now. */
  rearm(integrationIds: readonly string[] = this.projection.integrationIds()): void {
    for (const id of integrationIds) this.watch(id);
  }

  /** Another node owns the integration now: its offline deadline is kept there. */
  unwatch(integrationId: string): void {
    this.presence.delete(integrationId);
  }

  /** A committed event of the integration (this node's or another's): an online one without a deadline here gets one. */
  committed(event: BackendEvent): void {
    if (isIntegrationEvent(event)) this.watch(event.integration_id);
  }

  private watch(integrationId: string): void {
    if (!this.owns(integrationId)) return;
    const integration = this.projection.integration(integrationId);
    if (integration !== undefined && isOnline(integration) && !this.presence.has(integrationId))
      this.presence.set(integrationId, this.clock.now() + this.graceMs);
  }

  private get graceMs(): number {
    return this.liveness.missedHeartbeats * this.liveness.heartbeatIntervalMs;
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
    const created: BackendEvent = {
      type: 'integration.created',
      integration_id,
      provider_kind: providerKind,
      relay_token_digest: tokenDigest(relay_token),
      client_token_digest: tokenDigest(client_token),
      at: this.clock.now(),
    };
    await this.log.decide(integration_id, () => ({ events: [created], outcome: undefined }));
    return { integration_id, provider_kind: providerKind, relay_token, client_token };
  }

  integration(integrationId: string): IntegrationSnapshot | undefined {
    return this.projection.integration(integrationId);
  }

  /** A fresh token for one role, handed out this once; the old one stops working as the new digest is logged. */
  async rotate(
    integrationId: string,
    role: 'relay' | 'client',
  ): Promise<{ readonly token: string } | { readonly refused: 'integration_not_found' | 'integration_revoked' }> {
    const token = newToken();
    const at = this.clock.now();
    return this.log.decide(
      integrationId,
      (): Decision<BackendEvent, { readonly token: string } | { readonly refused: 'integration_not_found' | 'integration_revoked' }> => {
        const integration = this.projection.integration(integrationId);
        if (integration === undefined) return nothing({ refused: 'integration_not_found' });
        if (isRevoked(integration)) return nothing({ refused: 'integration_revoked' });
        return {
          events: [{ type: 'integration.token_rotated', integration_id: integrationId, role, token_digest: tokenDigest(token), at }],
          outcome: { token },
        };
      },
    );
  }

  /** Revokes the integration: both its tokens stop working, for good. Revoking it again changes nothing. */
  async revoke(integrationId: string): Promise<IntegrationSnapshot | undefined> {
    const at = this.clock.now();
    const found = await this.log.decide(integrationId, () => {
      const integration = this.projection.integration(integrationId);
      if (integration === undefined) return nothing(false);
      return { events: isRevoked(integration) ? [] : [{ type: 'integration.revoked', integration_id: integrationId, at }], outcome: true };
    });
    this.presence.delete(integrationId);
    return found ? this.projection.integration(integrationId) : undefined;
  }

  /** Whether `token` is the integration's current token of that role (constant time; a revoked integration has none). */
  authenticates(integrationId: string, role: 'relay' | 'client', token: string): boolean {
    const integration = this.projection.integration(integrationId);
    if (integration === undefined || isRevoked(integration)) return false;
    const { relay_token_digest, client_token_digest } = integration.context;
    return matchesDigest(token, role === 'relay' ? relay_token_digest : client_token_digest);
  }

  /**
   * A heartbeat (2.3): the integration is online until `missedHeartbeats` intervals pass without one;
   * what its plugin says of itself is logged when it is news; the jobs it names as running keep their
   * leases. The answer says whether the plugin is refused (its versions, its provider) and when to send
   * the next one. News sooner than the status interval after the last is refused (`OverQuota`, nothing
   * logged): the heartbeat still keeps the integration online, but renews no lease.
   */
  async heartbeat(integrationId: string, heartbeat: Heartbeat): Promise<HeartbeatAnswer | OverQuota | undefined> {
    const at = this.clock.now();
    const known = this.projection.integration(integrationId);
    if (known === undefined || isRevoked(known)) return undefined;
    if (heartbeat.status === 'stopped') return this.stopped(integrationId, at);
    const until = at + this.graceMs;
    // Shared first: a node whose offline deadline comes now finds this heartbeat.
    await this.heartbeats.beat(integrationId, until);
    const decided = await this.log.decide(
      integrationId,
      (): Decision<BackendEvent, { refused: CodedError | undefined } | OverQuota | undefined> => {
        const integration = this.projection.integration(integrationId);
        if (integration === undefined || isRevoked(integration)) return nothing(undefined);
        const refused = refusalOf(integration, heartbeat);
        const seen = seenOf(integration, heartbeat, refused, at);
        if (seen === undefined) return nothing({ refused });
        const over = overStatusChanges(integration, this.quotas.statusIntervalMs, at);
        return over === undefined ? { events: [seen], outcome: { refused } } : nothing(over);
      },
    );
    if (decided === undefined) return undefined;
    if (this.owns(integrationId)) this.presence.set(integrationId, until);
    if ('over' in decided) return decided;
    const { refused } = decided;
    await this.renew(integrationId, refused === undefined ? heartbeat.running_job_ids : [], at);
    return { ...this.answer(), ...(refused === undefined ? {} : { refused }) };
  }

  private answer(): HeartbeatAnswer {
    return { ok: true, interval_s: this.liveness.heartbeatIntervalMs / 1000, probe_requested: false };
  }

  /**
   * The plugin's last heartbeat, as it stops: offline now rather than three intervals later, logged whatever
   * the status interval (as coming online is); it renews nothing, and the offline deadline here goes.
   */
  private async stopped(integrationId: string, at: number): Promise<HeartbeatAnswer | undefined> {
    const known = await this.log.decide(integrationId, () => {
      const integration = this.projection.integration(integrationId);
      if (integration === undefined || isRevoked(integration)) return nothing(false);
      return { events: isOnline(integration) ? [{ type: 'integration.offline', integration_id: integrationId, at }] : [], outcome: true };
    });
    if (!known) return undefined;
    this.presence.delete(integrationId);
    return this.answer();
  }

  /**
   * A stream of the integration opens on `node`: the log says that node holds it from now (an event only
   * when another node held it, so a plugin reconnecting to one node logs nothing). False when the
   * integration is unknown or revoked.
   */
  async holdStream(integrationId: string, node: string): Promise<boolean> {
    const at = this.clock.now();
    return this.log.decide(
      integrationId,
      (): Decision<BackendEvent, boolean> => {
        const integration = this.projection.integration(integrationId);
        if (integration === undefined || isRevoked(integration)) return nothing(false);
        if (this.projection.streamHolder(integrationId) === node) return nothing(true);
        return { events: [{ type: 'integration.stream_held', integration_id: integrationId, node, at }], outcome: true };
      },
      OWNER,
    );
  }

  /** The offline deadline came: offline, unless a heartbeat (on any node) keeps it online longer. */
  private async offlineUnlessSeen(integrationId: string): Promise<void> {
    const until = await this.heartbeats.until(integrationId);
    const now = this.clock.now();
    if (until !== undefined && until > now) {
      this.presence.set(integrationId, until);
      return;
    }
    await this.log.decide(
      integrationId,
      () => {
        const integration = this.projection.integration(integrationId);
        const online = integration !== undefined && !isRevoked(integration) && isOnline(integration);
        return { events: online ? [{ type: 'integration.offline', integration_id: integrationId, at: now }] : [], outcome: undefined };
      },
      OWNER,
    );
  }
}
