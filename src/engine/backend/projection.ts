/**
 * The backend's projection: every integration and every reasoning job, folded from the backend's log
 * through the machines' `evolve`, and the indexes the engine reads (each integration's open jobs, the
 * frames sent on its stream). No I/O, no clock: a test drives it with events alone.
 */
import { forgottenJobKeys, isPairingEvent, type BackendEvent, type BackendForgotten } from '../../machines/backend-events.js';
import { evolveIntegration, initialIntegration, type IntegrationSnapshot } from '../../machines/integration.js';
import { jobDecider } from '../../machines/job-decider.js';
import { jobKey, type JobEvent, type JobRef } from '../../machines/job-events.js';
import { isSettled, type JobSnapshot } from '../../machines/job.js';
import { pairingDecider } from '../../machines/pairing-decider.js';
import type { PairingEvent } from '../../machines/pairing-events.js';
import { isPairingOpen, type PairingSnapshot } from '../../machines/pairing.js';
import { CapabilityProfile } from '../../protocol/index.js';

/** An integration's current capability profile (2.4): the result of its latest completed plain probe. */
export interface ProbedProfile {
  readonly job_id: string;
  readonly completed_at: number;
  readonly profile: CapabilityProfile;
}

/** Everything the backend projection holds: what a snapshot stores (state-codec.ts encodes it). */
export interface BackendState {
  readonly integrations: ReadonlyMap<string, IntegrationSnapshot>;
  readonly jobs: ReadonlyMap<string, JobSnapshot>;
  readonly open: ReadonlyMap<string, ReadonlySet<string>>;
  readonly sent: ReadonlyMap<string, number>;
  readonly profiles: ReadonlyMap<string, ProbedProfile>;
  readonly versions: ReadonlyMap<string, number>;
  readonly pairings: ReadonlyMap<string, PairingSnapshot>;
  readonly handles: ReadonlyMap<string, string>;
}

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

  /** The folded state as it stands (shared, not copied: encode it before folding on). */
  state(): BackendState {
    const { integrations, jobs, open, sent, profiles, versions, pairings, handles } = this;
    return { integrations, jobs, open, sent, profiles, versions, pairings, handles };
  }

  /** Takes the state a snapshot held, in place of what was folded so far (nothing, at a start). */
  restore(state: BackendState): void {
    for (const key of Object.keys(state) as Array<keyof BackendState>) {
      const mine = this[key] as Map<string, unknown>;
      mine.clear();
      for (const [id, value] of state[key]) mine.set(id, value instanceof Set ? new Set(value) : value);
    }
  }

  apply(event: BackendEvent): void {
    switch (event.type) {
      case 'backend.started':
        return;
      case 'backend.forgotten':
        return this.forget(event);
      case 'integration.created':
        this.integrations.set(event.integration_id, initialIntegration(event));
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
        return;
      }
      default:
        return isPairingEvent(event) ? this.applyPairing(event) : this.applyJob(event);
    }
  }

  private forget(event: BackendForgotten): void {
    for (const key of forgottenJobKeys(event, this.jobs.keys())) {
      this.jobs.delete(key);
      this.versions.delete(key);
    }
    for (const id of event.pairing_ids) this.pairings.delete(id);
    for (const [integration, seq] of Object.entries(event.sent)) this.sent.set(integration, Math.max(this.sent.get(integration) ?? 0, seq));
  }

  /**
   * What retention may forget, at most `max` of each: jobs settled before `endedBefore` (but not the
   * probe an integration's capability profile comes from), and pairings that ended before it.
   */
  forgettable(endedBefore: number, max: number): { readonly jobs: JobRef[]; readonly pairing_ids: string[] } {
    const profiled = new Set([...this.profiles].map(([integrationId, profile]) => jobKey(integrationId, profile.job_id)));
    const jobs: JobRef[] = [];
    for (const [key, job] of this.jobs) {
      if (jobs.length === max) break;
      const { integration_id, job_id, settled_at: settledAt } = job.context;
      if (settledAt !== undefined && settledAt < endedBefore && !profiled.has(key)) jobs.push({ integration_id, job_id });
    }
    const pairing_ids: string[] = [];
    for (const [id, pairing] of this.pairings) {
      if (pairing_ids.length === max) break;
      const endedAt = pairing.context.ended_at;
      if (endedAt !== undefined && endedAt < endedBefore) pairing_ids.push(id);
    }
    return { jobs, pairing_ids };
  }

  /** Each integration's stream position (what a `backend.forgotten` event keeps). */
  streamPositions(): Record<string, number> {
    return Object.fromEntries(this.sent);
  }

  private applyPairing(event: PairingEvent): void {
    const pairing = pairingDecider.evolve(this.pairings.get(event.pairing_id), event)!;
    this.pairings.set(event.pairing_id, pairing);
    if (event.type === 'pairing.started') this.handles.set(event.handle, event.pairing_id);
    else if (!isPairingOpen(pairing)) this.handles.delete(pairing.context.handle);
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

  private applyJob(event: JobEvent): void {
    const { integration_id } = event;
    const key = jobKey(integration_id, event.job_id);
    const job = jobDecider.evolve(this.jobs.get(key), event)!;
    this.jobs.set(key, job);
    this.versions.set(key, (this.versions.get(key) ?? 0) + 1);
    if (event.type === 'job.created') {
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

  version(integrationId: string, jobId: string): number {
    return this.versions.get(jobKey(integrationId, jobId)) ?? 0;
  }

  profile(integrationId: string): ProbedProfile | undefined {
    return this.profiles.get(integrationId);
  }

  integration(integrationId: string): IntegrationSnapshot | undefined {
    return this.integrations.get(integrationId);
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
