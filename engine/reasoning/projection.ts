/**
 * The backend's projection: every integration and every reasoning job, folded from the backend's log
 * through the machines' `evolve`, and the indexes the engine reads (each integration's open jobs, the
 * frames sent on its stream). No I/O, no clock: a test drives it with events alone.
 */
import { forgottenJobKeys, isPairingEvent, type BackendEvent, type BackendForgotten } from '../../machines/reasoning/backend-events.js';
import {
  compactedIntegration,
  evolveIntegration,
  initialIntegration,
  isOnline,
  type IntegrationSnapshot,
} from '../../machines/reasoning/integration.js';
import { jobDecider } from '../../machines/reasoning/job-decider.js';
import { jobKey, jobRefOf, type JobEvent } from '../../machines/reasoning/job-events.js';
import { isSettled, type JobSnapshot } from '../../machines/reasoning/job.js';
import { pairingDecider } from '../../machines/reasoning/pairing-decider.js';
import type { PairingEvent } from '../../machines/reasoning/pairing-events.js';
import { isPairingOpen, type PairingSnapshot } from '../../machines/reasoning/pairing.js';
import { countOneMore, windowOf, type WindowCount } from '../../machines/reasoning/quotas.js';
import { CapabilityProfile } from '../../protocol/index.js';
import { partitionState, removePartition, serviceState, type BackendState, type ProbedProfile, type Ticket } from './backend-state.js';

export class BackendProjection {
  private readonly integrations = new Map<string, IntegrationSnapshot>();
  /** Every job by its `jobKey`: two integrations may each have a job of the same `job_id`. */
  private readonly jobs = new Map<string, JobSnapshot>();
  /** Each integration's open jobs (by `job_id`), in the order they were created. */
  private readonly open = new Map<string, Set<string>>();
  /** Frames sent on each integration's stream so far: the next one's id is one more. */
  private readonly sent = new Map<string, number>();
  private readonly profiles = new Map<string, ProbedProfile>();
  /** How many events each job (by `jobKey`) has had: the id of the frame its followers get (6e.13). */
  private readonly versions = new Map<string, number>();
  private readonly pairings = new Map<string, PairingSnapshot>();
  /** The open pairings by their code's handle. */
  private readonly handles = new Map<string, string>();
  /** The node (its epoch) that holds each integration's stream, as the log says. */
  private readonly holders = new Map<string, string>();
  /** When each integration's oldest event that a compaction would stand for was logged (none: it has only its first). */
  private readonly compactFrom = new Map<string, number>();
  /** The operator's pairing tickets by their digest, until retention forgets them (used or expired). */
  private readonly tickets = new Map<string, Ticket>();
  /** The jobs each integration created in the latest minute it created one (what `--max-jobs-per-minute` counts). */
  private readonly created = new Map<string, WindowCount>();
  /** Each integration's jobs by `jobKey`, in the order they came: an index of `jobs`, rebuilt on a restore, never stored. */
  private readonly jobKeysOf = new Map<string, Set<string>>();

  /** The folded state as it stands (shared, not copied: encode it before folding on). */
  state(): BackendState {
    const { integrations, jobs, open, sent, profiles, versions, pairings, handles, compactFrom, holders, tickets, created } = this;
    return { integrations, jobs, open, sent, profiles, versions, pairings, handles, compactFrom, holders, tickets, created };
  }

  /** Takes the state a snapshot held, in place of what was folded so far (nothing, at a start). */
  restore(state: BackendState): void {
    for (const key of Object.keys(state) as Array<keyof BackendState>) (this[key] as Map<string, unknown>).clear();
    this.jobKeysOf.clear();
    this.merge(state);
  }

  /** Takes in a partition's state (one loaded from its snapshot) beside those held: none of its entries may be held already. */
  merge(state: BackendState): void {
    for (const key of Object.keys(state) as Array<keyof BackendState>) {
      const mine = this[key] as Map<string, unknown>;
      for (const [id, value] of state[key]) mine.set(id, value instanceof Set ? new Set(value) : value);
    }
    for (const job of state.jobs.values()) this.indexJob(job.context.integration_id, job.context.job_id);
  }

  /** The state of one integration's partition, copied: what its snapshot stores. */
  partition(integrationId: string): BackendState {
    return partitionState(this.state(), integrationId, this.jobKeysOf.get(integrationId) ?? []);
  }

  /** The state of the service's partition (pairings, tickets), copied. */
  service(): BackendState {
    return serviceState(this.state());
  }

  /** Lets go of one integration's partition: this node no longer serves it. */
  evict(integrationId: string): void {
    removePartition(this.state(), integrationId, this.jobKeysOf.get(integrationId) ?? []);
    this.jobKeysOf.delete(integrationId);
  }

  /** Lets go of the service's partition (pairings, their handles, tickets): it is folded again. */
  evictService(): void {
    for (const map of [this.pairings, this.handles, this.tickets]) map.clear();
  }

  /** Whether the integration has timers to keep (an open job, or its plugin online): it needs an owner. */
  live(integrationId: string): boolean {
    const integration = this.integrations.get(integrationId);
    return integration !== undefined && (isOnline(integration) || this.open.has(integrationId));
  }

  /** How many jobs of the integration the fold holds. */
  jobCount(integrationId: string): number {
    return this.jobKeysOf.get(integrationId)?.size ?? 0;
  }

  /** Every job of the integration the fold holds, oldest first. */
  jobsOf(integrationId: string): JobSnapshot[] {
    return [...(this.jobKeysOf.get(integrationId) ?? [])].map((key) => this.jobs.get(key)!);
  }

  private indexJob(integrationId: string, jobId: string): void {
    const jobs = this.jobKeysOf.get(integrationId) ?? new Set<string>();
    this.jobKeysOf.set(integrationId, jobs.add(jobKey(integrationId, jobId)));
  }

  apply(event: BackendEvent): void {
    switch (event.type) {
      case 'backend.started':
        return;
      case 'backend.forgotten':
        return this.forget(event);
      case 'pairing_ticket.issued':
        this.tickets.set(event.ticket_digest, { expires_at: event.expires_at, used: false });
        return;
      case 'integration.created':
        this.integrations.set(event.integration_id, initialIntegration(event));
        return;
      case 'integration.compacted':
        // Taken out and put back: the fold of a log whose events before it were removed has it in this place too.
        this.integrations.delete(event.integration_id);
        this.integrations.set(event.integration_id, compactedIntegration(event));
        this.compactFrom.delete(event.integration_id);
        return;
      case 'integration.token_rotated':
      case 'integration.revoked':
      case 'integration.seen':
      case 'integration.offline':
      case 'integration.rekey_requested':
      case 'integration.rekey_answered': {
        const integration = this.integrations.get(event.integration_id);
        if (integration === undefined) throw new Error(`event log: ${event.type} for ${event.integration_id}, not an integration`);
        this.integrations.set(event.integration_id, evolveIntegration(integration, event));
        if (!this.compactFrom.has(event.integration_id)) this.compactFrom.set(event.integration_id, event.at);
        return;
      }
      case 'integration.stream_held':
        if (!this.integrations.has(event.integration_id))
          throw new Error(`event log: ${event.type} for ${event.integration_id}, not an integration`);
        this.holders.set(event.integration_id, event.node);
        return;
      default:
        return isPairingEvent(event) ? this.applyPairing(event) : this.applyJob(event);
    }
  }

  private forget(event: BackendForgotten): void {
    for (const key of forgottenJobKeys(event, this.jobs.keys())) {
      this.jobs.delete(key);
      this.versions.delete(key);
      this.jobKeysOf.get(jobRefOf(key).integration_id)?.delete(key);
    }
    for (const id of event.pairing_ids) this.pairings.delete(id);
    for (const digest of event.ticket_digests ?? []) this.tickets.delete(digest);
    for (const [id, { window }] of this.created) if (window < windowOf(event.at)) this.created.delete(id);
    for (const [id, count] of Object.entries(event.created ?? {})) this.created.set(id, count);
    for (const [integration, seq] of Object.entries(event.sent)) this.sent.set(integration, Math.max(this.sent.get(integration) ?? 0, seq));
    for (const id of event.integration_ids ?? []) {
      this.integrations.delete(id);
      this.profiles.delete(id);
      this.sent.delete(id);
      this.compactFrom.delete(id);
      this.holders.delete(id);
      this.created.delete(id);
      this.jobKeysOf.delete(id);
    }
  }

  private applyPairing(event: PairingEvent): void {
    const pairing = pairingDecider.evolve(this.pairings.get(event.pairing_id), event)!;
    this.pairings.set(event.pairing_id, pairing);
    if (event.type === 'pairing.started') {
      this.handles.set(event.handle, event.pairing_id);
      const ticket = event.ticket_digest === undefined ? undefined : this.tickets.get(event.ticket_digest);
      if (ticket !== undefined) this.tickets.set(event.ticket_digest!, { ...ticket, used: true });
    } else if (!isPairingOpen(pairing)) this.handles.delete(pairing.context.handle);
  }

  pairing(pairingId: string): PairingSnapshot | undefined {
    return this.pairings.get(pairingId);
  }

  /** The open pairing a code's handle names. */
  pairingByHandle(handle: string): PairingSnapshot | undefined {
    const id = this.handles.get(handle);
    return id === undefined ? undefined : this.pairings.get(id);
  }

  /** Every open pairing (what a start re-arms the expiry of, and what the limit on open pairings counts). */
  openPairings(): PairingSnapshot[] {
    return [...this.handles.values()].map((id) => this.pairings.get(id)!);
  }

  /** When the unused pairing ticket with this digest expires; undefined if there is none (never issued, or used). */
  ticketExpiry(digest: string): number | undefined {
    const ticket = this.tickets.get(digest);
    return ticket === undefined || ticket.used ? undefined : ticket.expires_at;
  }

  /** When each unused ticket that has not expired by `now` expires. */
  liveTickets(now: number): number[] {
    return [...this.tickets.values()].filter(({ expires_at, used }) => !used && expires_at > now).map(({ expires_at }) => expires_at);
  }

  private applyJob(event: JobEvent): void {
    const { integration_id } = event;
    const key = jobKey(integration_id, event.job_id);
    const job = jobDecider.evolve(this.jobs.get(key), event)!;
    this.jobs.set(key, job);
    this.versions.set(key, (this.versions.get(key) ?? 0) + 1);
    this.indexJob(integration_id, event.job_id);
    if (event.type === 'job.created') {
      this.created.set(integration_id, countOneMore(this.created.get(integration_id), event.at));
      const open = this.open.get(integration_id) ?? new Set<string>();
      this.open.set(integration_id, open.add(event.job_id));
    } else if (isSettled(job)) {
      const open = this.open.get(integration_id);
      open?.delete(event.job_id);
      // No entry rather than an empty one: a fold of a log whose settled jobs retention removed has none either.
      if (open?.size === 0) this.open.delete(integration_id);
    }
    if (event.type === 'job.delivered') this.sent.set(integration_id, event.seq);
    if (event.type === 'job.completed' && job.context.purpose === 'capability_probe' && !job.context.byo) {
      // A BYO result is opaque to the backend; a plain one followed the job's response_schema, which a client may have chosen.
      const profile = CapabilityProfile.safeParse(event.result);
      if (profile.success) this.profiles.set(integration_id, { job_id: event.job_id, completed_at: event.at, profile: profile.data });
    }
  }

  /** The jobs the integration created in the latest minute it created one. */
  jobsCreated(integrationId: string): WindowCount | undefined {
    return this.created.get(integrationId);
  }

  version(integrationId: string, jobId: string): number {
    return this.versions.get(jobKey(integrationId, jobId)) ?? 0;
  }

  profile(integrationId: string): ProbedProfile | undefined {
    return this.profiles.get(integrationId);
  }

  integration(integrationId: string): IntegrationSnapshot | undefined {
    return this.integrations.get(integrationId);
  }

  /** The node (its epoch) whose stream of the integration the log says took over last, if any did. */
  streamHolder(integrationId: string): string | undefined {
    return this.holders.get(integrationId);
  }

  integrationIds(): string[] {
    return [...this.integrations.keys()];
  }

  /** The integration's job of that id (another integration's job of the same id is another job). */
  job(integrationId: string, jobId: string): JobSnapshot | undefined {
    return this.jobs.get(jobKey(integrationId, jobId));
  }

  /** The integration's open jobs, oldest first. */
  openJobs(integrationId: string): JobSnapshot[] {
    return [...(this.open.get(integrationId) ?? [])].map((jobId) => this.job(integrationId, jobId)!);
  }

  /** Every open job, for the deadlines and leases a start re-arms. */
  allOpenJobs(): JobSnapshot[] {
    return [...this.open.keys()].flatMap((integrationId) => this.openJobs(integrationId));
  }

  /** The id of the newest frame the integration's streams have been given (0: none yet). */
  lastSeq(integrationId: string): number {
    return this.sent.get(integrationId) ?? 0;
  }
}
