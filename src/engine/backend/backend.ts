/**
 * The backend relay's engine (1.1, 1.3, 4.1, 6.1): integrations, and the reasoning jobs it relays to each
 * integration's plugin over one live stream. Built from the host's parts: the event log and `Appender`
 * (append first, act after), `AfterCommit`, the `Clock`, `Deadlines` (job deadlines and delivery leases,
 * re-armed from the fold on start) and `SubscriptionActor` (the stream). A payload or result that is a BYO
 * envelope is relayed as it came: the backend never reads inside it.
 */
import { z } from 'zod';
import { ByoEnvelope, PURPOSES, jsonSchemaOf, type CodedError, type JobCreateBody, type JobResultBody } from '../../protocol/index.js';
import { checkResponseSchema, resultProblems } from '../../protocol/response-schema.js';
import type { BackendEvent } from '../../machines/backend-events.js';
import { isRevoked, type IntegrationSnapshot } from '../../machines/integration.js';
import type { JobCommand, JobOutcome } from '../../machines/job-decider.js';
import { isSettled, jobState, type JobSnapshot } from '../../machines/job.js';
import type { EventLog } from '../../storage/event-log.js';
import { AfterCommit } from '../after-commit.js';
import { Appender } from '../append.js';
import { randomIds, systemClock, type Clock, type IdSource } from '../clock.js';
import type { FailureContext } from '../config.js';
import { Deadlines } from '../deadlines.js';
import { HostClosingError, inBackground } from '../failures.js';
import type { SubscriberTransport, SubscriptionActor } from '../subscription-actor.js';
import { frameOf } from './frames.js';
import { Integrations } from './integrations.js';
import { BackendProjection, type ProbedProfile } from './projection.js';
import { JobFollowers, type RenderJob } from './followers.js';
import { JobStreams } from './streams.js';

/** An integration and its current capability profile, as a client or the operator reads them. */
export interface IntegrationRead {
  readonly integration: IntegrationSnapshot;
  readonly profile: ProbedProfile | undefined;
}

export interface BackendConfig {
  readonly clock?: Clock;
  readonly ids?: IdSource;
  /** How long a delivered job waits for its plugin to say it runs it, and how long a running job's lease lasts between heartbeats. Default 90 s: three heartbeats. */
  readonly leaseMs?: number;
  /** The heartbeat interval plugins are told (30 s, 2.3); three missed show an integration offline. */
  readonly heartbeatIntervalMs?: number;
  readonly keepaliveMs?: number;
  readonly onFatal?: (error: unknown) => void;
  readonly onError?: (error: unknown, context: FailureContext) => void;
}

export const DEFAULT_LEASE_MS = 90_000;
export const HEARTBEAT_INTERVAL_MS = 30_000;


export type JobAnswer =
  | { readonly outcome: JobOutcome; readonly job: JobSnapshot | undefined }
  /**
   * Refused before anything was logged: a create's payload that does not fit its purpose (or is not a BYO
   * envelope for a BYO job) or `response_schema` that does not compile; a plain result that does not follow
   * the job's schema (the job stays open); a plugin its heartbeat was refused.
   */
  | {
      readonly outcome: 'invalid';
      readonly code: 'invalid_payload' | 'invalid_response_schema' | 'result_invalid' | 'plugin_refused';
      readonly job: JobSnapshot | undefined;
      readonly message: string;
    };


export class Backend {
  readonly epoch: string;
  private readonly clock: Clock;
  private readonly ids: IdSource;
  private readonly leaseMs: number;
  /** Integrations, their tokens and heartbeats. */
  readonly integrations: Integrations;
  private readonly projection = new BackendProjection();
  private readonly appender: Appender<BackendEvent>;
  private readonly afterCommit: AfterCommit<BackendEvent>;
  private readonly deadlines: Deadlines<string>;
  private readonly leases: Deadlines<string>;
  private readonly streams: JobStreams;
  private readonly followers: JobFollowers;
  private readonly report: (error: unknown, context: FailureContext) => void;
  private closed = false;

  private constructor(log: EventLog<BackendEvent>, config: BackendConfig) {
    this.clock = config.clock ?? systemClock;
    this.ids = config.ids ?? randomIds;
    this.leaseMs = config.leaseMs ?? DEFAULT_LEASE_MS;
    this.streams = new JobStreams(this.clock, config.keepaliveMs ?? 20_000);
    this.followers = new JobFollowers(this.clock, config.keepaliveMs ?? 20_000);
    this.epoch = this.ids.token();
    this.report = config.onError ?? ((error, context) => process.emitWarning(`assistant-relay backend: ${context.what} failed: ${String(error)}`));
    this.appender = new Appender(log, (event) => this.projection.apply(event), config.onFatal ?? ((error) => process.nextTick(() => { throw error; })));
    this.afterCommit = new AfterCommit((error, what, event) => this.report(error, { what: event === undefined ? what : `${what} (${event.type})` }));
    this.deadlines = new Deadlines(this.clock, (jobId) => this.background(this.command({ type: 'expire', job_id: jobId, at: this.clock.now() }), 'job deadline'));
    this.leases = new Deadlines(this.clock, (jobId) => this.background(this.command({ type: 'release', job_id: jobId, at: this.clock.now() }), 'delivery lease'));
    this.integrations = new Integrations(
      this.projection,
      this.appender,
      this.clock,
      config.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS,
      async (jobIds, at) => {
        for (const job_id of jobIds) await this.command({ type: 'run', job_id, lease_until: at + this.leaseMs, at });
      },
      (work) => this.background(work, 'offline deadline'),
    );
    this.afterCommit.add({ name: 'jobs', event: (event) => this.committed(event) });
  }

  /** Folds the log, starts a new epoch, and re-arms every open job's deadline and lease from it. */
  static async start(log: EventLog<BackendEvent>, config: BackendConfig = {}): Promise<Backend> {
    const backend = new Backend(log, config);
    for (const { event } of log.read()) backend.projection.apply(event);
    log.onCommit((events) => backend.afterCommit.dispatch(events));
    await backend.appender.append([{ type: 'backend.started', epoch: backend.epoch, at: backend.clock.now() }]);
    for (const job of backend.projection.allOpenJobs()) backend.arm(job);
    backend.integrations.rearm();
    return backend;
  }

  // ---- integrations -------------------------------------------------------------------------------

  // ---- jobs: the client's side ----------------------------------------------------------------------

  /**
   * Creates a job (idempotent by `job_id`); its deadline is `deadline_ms` from now. A `response_schema`
   * the client sends must compile as a JSON Schema, or the job is refused (`invalid`) before it is logged.
   */
  async createJob(integrationId: string, body: JobCreateBody): Promise<JobAnswer> {
    const integration = this.projection.integration(integrationId);
    if (integration === undefined || isRevoked(integration)) return { outcome: 'unknown', job: undefined };
    const payload = body.byo ? ByoEnvelope.safeParse(body.payload) : PURPOSES[body.purpose].payload.safeParse(body.payload);
    if (!payload.success) return { outcome: 'invalid', code: 'invalid_payload', job: undefined, message: z.prettifyError(payload.error) };
    if (body.response_schema !== undefined) {
      try {
        checkResponseSchema(body.response_schema);
      } catch (error) {
        return { outcome: 'invalid', code: 'invalid_response_schema', job: undefined, message: (error as Error).message };
      }
    }
    const at = this.clock.now();
    const outcome = await this.command({
      type: 'create',
      job_id: body.job_id,
      integration_id: integrationId,
      purpose: body.purpose,
      payload: body.payload,
      byo: body.byo,
      response_schema: body.response_schema ?? jsonSchemaOf(PURPOSES[body.purpose].result),
      provider_kind: integration.context.provider_kind,
      deadline_at: at + body.deadline_ms,
      at,
    });
    return { outcome, job: this.projection.job(body.job_id) };
  }

  job(jobId: string): JobSnapshot | undefined {
    return this.projection.job(jobId);
  }

  /** The job as the log holds it: what a client reads, so that a crash can never take back what it saw. */
  async committedJob(jobId: string): Promise<JobSnapshot | undefined> {
    await this.appender.settled();
    return this.projection.job(jobId);
  }

  /** The integration and its current capability profile as the log holds them (what its client reads). */
  async committedIntegration(integrationId: string): Promise<IntegrationRead | undefined> {
    await this.appender.settled();
    return this.readIntegration(integrationId);
  }

  /** Every integration as the log holds it, oldest first (what the operator lists). */
  async committedIntegrations(): Promise<IntegrationRead[]> {
    await this.appender.settled();
    return this.projection.integrationIds().map((id) => this.readIntegration(id)!);
  }

  private readIntegration(integrationId: string): IntegrationRead | undefined {
    const integration = this.projection.integration(integrationId);
    return integration === undefined ? undefined : { integration, profile: this.projection.profile(integrationId) };
  }

  /** Why the integration's plugin is refused, if its latest heartbeat was: it takes no jobs then. */
  refusalOf(integrationId: string): CodedError | undefined {
    return this.projection.integration(integrationId)?.context.seen?.refused;
  }

  async cancel(jobId: string): Promise<JobOutcome> {
    return this.command({ type: 'cancel', job_id: jobId, at: this.clock.now() });
  }

  // ---- jobs: the plugin's side ----------------------------------------------------------------------

  /** The plugin runs the job: its lease runs a full lease from now. */
  async running(integrationId: string, jobId: string): Promise<JobAnswer> {
    const job = this.projection.job(jobId);
    if (job === undefined || job.context.integration_id !== integrationId) return { outcome: 'unknown', job: undefined };
    const refusal = this.refusalOf(integrationId);
    if (refusal !== undefined) return { outcome: 'invalid', code: 'plugin_refused', job, message: refusal.message };
    const at = this.clock.now();
    return { outcome: await this.command({ type: 'run', job_id: jobId, lease_until: at + this.leaseMs, at }), job: this.projection.job(jobId) };
  }

  /** The completion endpoint (4.1): a result (checked against `response_schema` unless the job is BYO) or a failure report. */
  async result(integrationId: string, jobId: string, body: JobResultBody): Promise<JobAnswer> {
    const job = this.projection.job(jobId);
    if (job === undefined || job.context.integration_id !== integrationId) return { outcome: 'unknown', job: undefined };
    const at = this.clock.now();
    if ('error' in body) return { outcome: await this.command({ type: 'fail', job_id: jobId, error: body.error, at }), job: this.projection.job(jobId) };
    // A BYO result is an envelope the backend never reads inside; a plain one follows the job's schema. A settled job's answer says so first.
    const invalid = isSettled(job)
      ? undefined
      : job.context.byo
        ? ByoEnvelope.safeParse(body.result).success
          ? undefined
          : 'the result of a BYO job must be a BYO envelope'
        : resultProblems(job.context.response_schema, body.result);
    if (invalid !== undefined) return { outcome: 'invalid', code: 'result_invalid', job, message: invalid };
    return { outcome: await this.command({ type: 'complete', job_id: jobId, result: body.result, at }), job: this.projection.job(jobId) };
  }

  /**
   * Opens the integration's stream; one at a time, so a second one takes over from the first (which is
   * told `superseded` and ends). Every job waiting for the plugin is sent on it: created ones, and
   * delivered ones the cursor does not show the plugin received; a running one is not (its plugin has it,
   * and a lapsed lease brings it back).
   */
  openStream(integrationId: string, cursor: number | undefined, connect: () => SubscriberTransport): SubscriptionActor {
    const actor = this.streams.open(integrationId, connect);
    for (const job of this.projection.openJobs(integrationId)) {
      const state = jobState(job);
      const seen = cursor !== undefined && job.context.seq !== undefined && job.context.seq <= cursor;
      if (state === 'created' || (state === 'delivered' && !seen)) this.deliver(job);
    }
    return actor;
  }

  /**
   * A client follows a committed job: it is sent the job now (unless its cursor shows this version) and
   * after each change, until it leaves or the backend closes.
   */
  follow(job: JobSnapshot, cursor: number | undefined, connect: () => SubscriberTransport, render: RenderJob): SubscriptionActor {
    return this.followers.open(job, this.projection.version(job.context.job_id), cursor, connect, render);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.deadlines.stop();
    this.leases.stop();
    this.integrations.stop();
    this.streams.closeAll();
    this.followers.closeAll();
    await this.appender.settled();
  }

  // ---- the loop ----------------------------------------------------------------------------------

  private async command(command: JobCommand): Promise<JobOutcome> {
    // Nothing new enters the log of a closing backend; the edge answers 503 `shutting_down`.
    if (this.closed) throw new HostClosingError();
    const decision = this.projection.decideJob(command);
    if (decision.events.length > 0) await this.appender.append(decision.events);
    else if (this.appender.uncommitted.length > 0) await this.appender.settled();
    return decision.outcome;
  }

  private deliver(job: JobSnapshot): void {
    const { job_id, integration_id } = job.context;
    const at = this.clock.now();
    const command: JobCommand = { type: 'deliver', job_id, seq: this.projection.nextSeq(integration_id), lease_until: at + this.leaseMs, at };
    this.background(this.command(command), 'job delivery');
  }

  /** Once committed: frames go out, deadlines and leases follow the job. */
  private committed(event: BackendEvent): void {
    if (event.type === 'backend.started' || !('job_id' in event)) return;
    const job = this.projection.job(event.job_id)!;
    this.followers.push(job, this.projection.version(event.job_id));
    switch (event.type) {
      case 'job.created':
      case 'job.released':
        this.arm(job);
        if (this.streams.isLive(event.integration_id) && !this.closed) this.deliver(job);
        return;
      case 'job.delivered':
        this.arm(job);
        this.streams.push(event.integration_id, frameOf(job, event.seq));
        return;
      case 'job.started':
      case 'job.renewed':
        this.arm(job);
        return;
      default:
        this.deadlines.delete(event.job_id);
        this.leases.delete(event.job_id);
    }
  }

  /** Sets the job's deadline, and its lease while it has one. */
  private arm(job: JobSnapshot): void {
    const { job_id, deadline_at, lease_until } = job.context;
    this.deadlines.set(job_id, deadline_at);
    if (lease_until === undefined) this.leases.delete(job_id);
    else this.leases.set(job_id, lease_until);
  }

  private background(work: Promise<unknown>, what: string): void {
    inBackground(work, this.report, { what });
  }
}
