/**
 * What the backend relay's event log stores: its starts, its integrations, and its reasoning jobs
 * (job-events.ts). Like the host's, every state is the fold of these, and time arrives as data.
 */
import type { CodedError, Heartbeat, VersionRange } from '../../protocol/index.js';
import type { IntegrationContext } from './integration.js';
import { jobKey, jobRefOf, type JobEvent } from './job-events.js';
import type { PairingEvent, PairingTicketIssued } from './pairing-events.js';
import type { WindowCount } from './quotas.js';

export interface BackendStarted {
  readonly type: 'backend.started';
  readonly epoch: string;
  readonly at: number;
}

/**
 * Retention: jobs settled, pairings ended, and integrations revoked (with every job they had) before
 * `ended_before` are forgotten, as if never created; their events may then be removed from the log (a
 * fold with or without them ends the same, since this event is folded either way). `sent` keeps every
 * remaining integration's stream position as it stood: the deliveries that told it may be among the
 * removed events, and so may the forgetting events before this one.
 */
export interface BackendForgotten {
  readonly type: 'backend.forgotten';
  /**
   * The integration whose partition this forgetting is of: it names that integration's jobs, compaction
   * and counts alone. Absent: the service's partition (pairings, tickets), or an older log's forgetting of
   * the whole service at once.
   */
  readonly integration_id?: string;
  /** The jobs forgotten: each integration's, by `job_id` (a job is its integration's and its id's, PROTOCOL.md 6.7). */
  readonly jobs?: Readonly<Record<string, readonly string[]>>;
  /**
   * The same jobs by `job_id` alone: all a log written while a `job_id` was the whole service's has
   * (`forgottenJobKeys`), and still written beside `jobs` for a node of that version that folds the
   * shared log during a rolling deploy. A reader of this version reads `jobs` when it is there.
   */
  readonly job_ids?: readonly string[];
  readonly pairing_ids: readonly string[];
  /** Absent in the events of a backend that forgot no integrations. */
  readonly integration_ids?: readonly string[];
  /** Integrations restated by the `integration.compacted` events that follow this one, committed with it: their events before this one go. */
  readonly compacted_ids?: readonly string[];
  /** Pairing tickets used or expired (absent when none): their events go. */
  readonly ticket_digests?: readonly string[];
  /**
   * The jobs each integration created in this event's minute (absent when none): what the limit on jobs a
   * minute counts, kept as it stood, since the `job.created` events it counted may be among those removed.
   * A count of an earlier minute counts nothing now, and goes.
   */
  readonly created?: Readonly<Record<string, WindowCount>>;
  readonly sent: Readonly<Record<string, number>>;
  readonly ended_before: number;
  readonly at: number;
}

/** An operator or a pairing created an integration: one paired assistant, with its two tokens, kept as digests only. */
export interface IntegrationCreated {
  readonly type: 'integration.created';
  readonly integration_id: string;
  readonly provider_kind: string;
  /** SHA-256 of the RELAY_TOKEN the plugin presents (5). */
  readonly relay_token_digest: string;
  /** SHA-256 of the token the client presents to create and follow jobs. */
  readonly client_token_digest: string;
  /** Made by a pairing (not by an operator): which, and the two public keys it ended with (never a secret). */
  readonly pairing?: { readonly pairing_id: string; readonly client_key: string; readonly assistant_key: string };
  readonly at: number;
}

/** One of the integration's tokens was replaced: the old one stops working at once. */
export interface IntegrationTokenRotated {
  readonly type: 'integration.token_rotated';
  readonly integration_id: string;
  readonly role: 'relay' | 'client';
  readonly token_digest: string;
  readonly at: number;
}

/** The integration was revoked: both its tokens stop working; its open jobs are cancelled first. */
export interface IntegrationRevoked {
  readonly type: 'integration.revoked';
  readonly integration_id: string;
  readonly at: number;
}

/** A heartbeat came from an integration that was not online (or one that says something new): what its plugin says of itself. */
export interface IntegrationSeen {
  readonly type: 'integration.seen';
  readonly integration_id: string;
  readonly plugin: Heartbeat['plugin'];
  readonly reasoner: Heartbeat['reasoner'];
  readonly status: Heartbeat['status'];
  readonly schema_versions: VersionRange;
  readonly envelope_versions: VersionRange;
  /** Why the backend refuses the plugin, if it does (its versions, its provider). */
  readonly refused?: CodedError;
  readonly at: number;
}

/** Three heartbeats missed: the integration is shown offline until the next one. */
export interface IntegrationOffline {
  readonly type: 'integration.offline';
  readonly integration_id: string;
  readonly at: number;
}

/** The client asked to rotate the pairing's keys (PROTOCOL.md 7.12): what the plugin's stream carries to it. */
export interface IntegrationRekeyRequested {
  readonly type: 'integration.rekey_requested';
  readonly integration_id: string;
  readonly rekey_id: string;
  readonly kid: string;
  readonly client_key: string;
  readonly mac: string;
  readonly at: number;
}

/** The plugin answered the rotation: what the client reads to finish it. */
export interface IntegrationRekeyAnswered {
  readonly type: 'integration.rekey_answered';
  readonly integration_id: string;
  readonly rekey_id: string;
  readonly assistant_key: string;
  readonly mac: string;
  readonly at: number;
}

/**
 * The integration's stream is held on node `node` (a backend's epoch) from now: a stream another node
 * holds for it is superseded (PROTOCOL.md 6e.14). Logged when a stream opens on a node other than the one
 * the log names, so a plugin that reconnects to the same node logs nothing.
 */
export interface IntegrationStreamHeld {
  readonly type: 'integration.stream_held';
  readonly integration_id: string;
  readonly node: string;
  readonly at: number;
}

/**
 * Retention: the integration as it stands (its statechart's state and context, as its events folded it),
 * standing for every event of it before this one, which are then removed from the log: a live
 * integration's history is kept for the retention, not for its whole life.
 */
export interface IntegrationCompacted {
  readonly type: 'integration.compacted';
  readonly integration_id: string;
  readonly state: string | Readonly<Record<string, string>>;
  readonly context: IntegrationContext;
  readonly at: number;
}

export type IntegrationEvent =
  | IntegrationCreated
  | IntegrationTokenRotated
  | IntegrationRevoked
  | IntegrationSeen
  | IntegrationOffline
  | IntegrationRekeyRequested
  | IntegrationRekeyAnswered
  | IntegrationStreamHeld;

export type BackendEvent =
  BackendStarted | BackendForgotten | IntegrationEvent | IntegrationCompacted | JobEvent | PairingEvent | PairingTicketIssued;

export function isJobEvent(event: BackendEvent): event is JobEvent {
  return event.type.startsWith('job.');
}

export function isIntegrationEvent(event: BackendEvent): event is IntegrationEvent | IntegrationCompacted {
  return event.type.startsWith('integration.');
}

export function isPairingEvent(event: BackendEvent): event is PairingEvent {
  return event.type.startsWith('pairing.');
}

/**
 * The `jobKey` of each job a `backend.forgotten` names, among `keys` (those of the jobs folded so far). An
 * older log names them by `job_id` alone: each id was then one job's, so it is the job of that id.
 */
export function forgottenJobKeys(event: BackendForgotten, keys: Iterable<string>): string[] {
  if (event.jobs !== undefined)
    return Object.entries(event.jobs).flatMap(([integrationId, jobIds]) => jobIds.map((jobId) => jobKey(integrationId, jobId)));
  const older = new Set(event.job_ids);
  return older.size === 0 ? [] : [...keys].filter((key) => older.has(jobRefOf(key).job_id));
}

/** The log's stream of a job's events: `job:{integration_id}:{job_id}`. */
export function jobStream(integrationId: string, jobId: string): string {
  return `job:${jobKey(integrationId, jobId)}`;
}

/** Where a log written while a `job_id` was the whole service's kept a job's events: `job:{job_id}` (retention and replay still read it). */
export function olderJobStream(jobId: string): string {
  return `job:${jobId}`;
}

/** The `job_id` a job's stream is of (`jobStream`, `olderJobStream`); `undefined` for a stream of no job. */
export function jobIdOfStream(stream: string): string | undefined {
  return stream.startsWith('job:') ? stream.slice(stream.lastIndexOf(':') + 1) : undefined;
}

/** The stream of the service partition's forgetting events (older logs have them in ''). */
export const BACKEND_FORGOTTEN_STREAM = 'forgotten';

/** The stream of an integration's forgetting events: `forgotten:{integration_id}`; the service's without one. */
export function forgottenStream(integrationId: string | undefined): string {
  return integrationId === undefined ? BACKEND_FORGOTTEN_STREAM : `${BACKEND_FORGOTTEN_STREAM}:${integrationId}`;
}

/**
 * The integration whose partition an event is of (the backend's state is partitioned by integration:
 * ARCHITECTURE.md), or undefined for the service's own partition: pairings (an integration does not exist
 * before its pairing completes), pairing tickets and node starts.
 */
export function partitionOf(event: BackendEvent): string | undefined {
  if (event.type === 'backend.forgotten') return event.integration_id;
  return isJobEvent(event) || isIntegrationEvent(event) ? event.integration_id : undefined;
}

/** The log's stream of a pairing ticket's one event: `pairing_ticket:{its digest}` (older logs have it in ''). */
export function ticketStream(ticketDigest: string): string {
  return `pairing_ticket:${ticketDigest}`;
}

/** The log's stream of an event: its job, its pairing, its integration, its ticket, the forgetting events', or '' for the backend's starts. */
export function backendStreamOf(event: BackendEvent): string {
  if (event.type === 'backend.forgotten') return forgottenStream(event.integration_id);
  if (event.type === 'backend.started') return '';
  if (event.type === 'pairing_ticket.issued') return ticketStream(event.ticket_digest);
  if (isJobEvent(event)) return jobStream(event.integration_id, event.job_id);
  return isPairingEvent(event) ? `pairing:${event.pairing_id}` : `integration:${event.integration_id}`;
}
