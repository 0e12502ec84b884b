/**
 * The backend's `JobStore` seam: where reasoning jobs are kept. `update` runs a decision against one
 * job's current state and appends what it decides, atomically; the reads give what the engine needs to
 * deliver, follow and re-arm jobs. Nothing in the interface is SQLite's, so the engine runs unchanged on
 * the log several nodes share (PostgreSQL: each append a transaction that locks its integration's
 * partition, so a decision sees everything committed to it before; partitioned-log.ts).
 *
 * `LogJobStore` keeps jobs in the backend's own log (`BackendLog`: SQLite embedded, or PostgreSQL shared
 * by several nodes): decisions are taken against the fold (which already holds what was appended and not
 * yet committed, so a retry is a duplicate at once), reads answer what this node has folded as committed.
 * A job is its integration's and its `job_id`'s: every update and read names both, so that two
 * integrations' jobs of the same id never meet (PROTOCOL.md 6.7).
 * On a shared log a read is as fresh as the node's last look: a request looks first (`Backend.caughtUp`),
 * and a notice comes from the fold itself, so neither reads a job older than what it needs.
 */
import type { Decision } from '../../machines/core/decider.js';
import { forgottenJobKeys, type BackendForgotten } from '../../machines/reasoning/backend-events.js';
import { jobKey, type JobEvent } from '../../machines/reasoning/job-events.js';
import type { JobSnapshot } from '../../machines/reasoning/job.js';
import type { BackendLog, DecideOptions } from './backend-log.js';
import type { BackendProjection } from './projection.js';

/** A job and its version: how many events it has had (1: created). */
export interface StoredJob {
  readonly job: JobSnapshot;
  readonly version: number;
}

/** What an integration's stream starts from. */
export interface OpenJobs {
  /** The integration's open jobs, oldest first. */
  readonly jobs: readonly JobSnapshot[];
  /** The id of the newest frame any of its streams has been given (0: none yet). */
  readonly lastSeq: number;
}

/**
 * A decision on one job, from its current state (`undefined`: no such job). It must be pure and its events
 * must all be that job's: a store may call it again when its transaction has to be retried.
 */
export type JobDecide<Outcome> = (job: JobSnapshot | undefined) => Decision<JobEvent, Outcome>;

export interface JobStore {
  /**
   * Decides against the job's current state and appends the events, atomically: no other update of the
   * job comes between. Resolves once the events, or the state a decision of none was taken on, are
   * committed, with the decision's outcome; every committed event reaches the engine's after-commit
   * dispatch.
   */
  update<Outcome>(integrationId: string, jobId: string, decide: JobDecide<Outcome>, options?: DecideOptions): Promise<Outcome>;
  /** The integration's job as committed (never a state a crash could take back). */
  job(integrationId: string, jobId: string): Promise<StoredJob | undefined>;
  /** The integration's open jobs and stream position, as of at least everything committed before the call. */
  openJobs(integrationId: string): Promise<OpenJobs>;
  /** Every open job: what a start re-arms deadlines and leases from. */
  allOpenJobs(): Promise<readonly JobSnapshot[]>;
}

export class LogJobStore implements JobStore {
  /** By `jobKey`. */
  private readonly committedJobs = new Map<string, StoredJob>();
  /** Each folded event's job as it left it, until the event is committed. */
  private readonly afterEvent = new WeakMap<JobEvent, StoredJob>();

  constructor(
    private readonly projection: BackendProjection,
    private readonly log: BackendLog<unknown>,
  ) {}

  /** The projection was restored from a snapshot of committed state (every job it holds is committed as it stands), or emptied. */
  restored(): void {
    this.committedJobs.clear();
    for (const job of this.projection.state().jobs.values()) this.restoredJob(job);
  }

  /**
   * One integration's partition was loaded from its snapshot, or let go: its jobs (`before`, as the projection
   * held them until then) are as the projection now holds them (none, let go).
   */
  restoredPartition(integrationId: string, before: readonly JobSnapshot[]): void {
    for (const { context } of before) this.committedJobs.delete(jobKey(context.integration_id, context.job_id));
    for (const job of this.projection.jobsOf(integrationId)) this.restoredJob(job);
  }

  private restoredJob(job: JobSnapshot): void {
    const { integration_id, job_id } = job.context;
    this.committedJobs.set(jobKey(integration_id, job_id), { job, version: this.projection.version(integration_id, job_id) });
  }

  /** Retention forgot these jobs (committed): reads no longer find them. */
  forgotten(event: BackendForgotten): void {
    for (const key of forgottenJobKeys(event, this.committedJobs.keys())) this.committedJobs.delete(key);
  }

  /** The projection has folded a job event (appended now, or read from the log at start). */
  folded(event: JobEvent): void {
    const job = this.projection.job(event.integration_id, event.job_id)!;
    this.afterEvent.set(event, { job, version: this.projection.version(event.integration_id, event.job_id) });
  }

  /** A folded job event is committed: reads see the job as that event left it. */
  committed(event: JobEvent): void {
    const stored = this.afterEvent.get(event);
    if (stored === undefined) throw new Error(`job store: ${event.type} for ${event.job_id} committed but never folded`);
    this.committedJobs.set(jobKey(event.integration_id, event.job_id), stored);
  }

  update<Outcome>(integrationId: string, jobId: string, decide: JobDecide<Outcome>, options?: DecideOptions): Promise<Outcome> {
    return this.log.decide(
      integrationId,
      () => {
        const decision = decide(this.projection.job(integrationId, jobId));
        const stray = decision.events.find((event) => event.integration_id !== integrationId || event.job_id !== jobId);
        if (stray !== undefined)
          throw new Error(
            `job store: a decision on ${jobKey(integrationId, jobId)} emitted ${stray.type} for ${jobKey(stray.integration_id, stray.job_id)}`,
          );
        return decision;
      },
      options,
    );
  }

  async job(integrationId: string, jobId: string): Promise<StoredJob | undefined> {
    await this.log.hold(integrationId);
    return this.committedJobs.get(jobKey(integrationId, jobId));
  }

  async openJobs(integrationId: string): Promise<OpenJobs> {
    await this.log.hold(integrationId);
    return { jobs: this.projection.openJobs(integrationId), lastSeq: this.projection.lastSeq(integrationId) };
  }

  async allOpenJobs(): Promise<readonly JobSnapshot[]> {
    return this.projection.allOpenJobs();
  }
}
