/**
 * The backend relay's engine (1.1, 1.3, 4.1, 6.1): integrations, and the reasoning jobs it relays to each
 * integration's plugin over one live stream. Built from the host's parts: the event log (append first, act
 * after), `AfterCommit`, the `Clock`, `Deadlines` (job deadlines and delivery leases, re-armed from the
 * fold on start: job-timers.ts) and `SubscriptionActor` (the stream). Jobs are kept through the `JobStore`
 * seam and their changes travel through the `PubSub` seam: the engine decides with the pure job decider
 * and reads through those two alone. A payload or result that is a BYO envelope is relayed as it came:
 * the backend never reads inside it.
 *
 * It reaches its log, the other nodes and the time only through the seams it is handed (seams.ts): the
 * embedded SQLite log of this process, or PostgreSQL shared by several nodes, is the composition root's
 * choice. On a shared log every node folds every event and dispatches it once, its own and the others',
 * so deadlines, leases and offline deadlines are kept on every node and a node's death loses no timer; a
 * channel that reaches the other nodes is told of this node's commits, so that they fold them at once.
 */
import { ByoEnvelope, DEADLINE_SKEW_MS, MAX_DEADLINE_MS, PURPOSES, jsonBytes, jsonSchemaOf, type CodedError, type JobCreateBody, type JobResultBody } from '../../protocol/index.js';
import { isJobEvent, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { nothing, type Decision } from '../../machines/core/decider.js';
import { isRevoked, type IntegrationSnapshot } from '../../machines/reasoning/integration.js';
import { jobDecider, type JobCommand, type JobOutcome } from '../../machines/reasoning/job-decider.js';
import { overJobRate, overOpenJobs, quotasOf, type OverQuota, type Quotas } from '../../machines/reasoning/quotas.js';
import type { JobEvent } from '../../machines/reasoning/job-events.js';
import { isSettled, type JobSnapshot } from '../../machines/reasoning/job.js';
import { AfterCommit } from '../core/after-commit.js';
import type { Clock } from '../core/clock.js';
import { HostClosingError, inBackground, type FailureContext } from '../core/failures.js';
import { DEFAULT_RETENTION_MS, Retention } from '../core/retention.js';
import type { SubscriberTransport, SubscriptionActor } from '../core/subscription-actor.js';
import type { BackendLog } from './backend-log.js';
import { DEFAULT_KEEPALIVE_MS, DEFAULT_LEASE_MS, DEFAULT_MAX_JOB_BYTES, HEARTBEAT_INTERVAL_MS, type BackendConfig } from './config.js';
import { JobFollowers, type RenderJob } from './followers.js';
import { rekeyFrame } from './frames.js';
import { Integrations } from './integrations.js';
import { createRefusal, overBoundMessage, type Invalid, type JobAnswer } from './job-answers.js';
import { LogJobStore, type JobDecide } from './job-store.js';
import { JobTimers } from './job-timers.js';
import { pairingLimitsOf } from './pairing-limits.js';
import { PAIRING_TTL_MS, Pairings } from './pairings.js';
import { inlineResultChecker, type ResultChecker } from './result-check.js';
import { BackendProjection, type BackendState, type ProbedProfile } from './projection.js';
import { assistantChannel, type JobNotice, type PubSub } from './pubsub.js';
import { DEFAULT_PAIRING_RETENTION_MS, forgetEndedRecords } from './retention.js';
import type { BackendSeams } from './seams.js';
import { backendSnapshotCodec } from './snapshot.js';
import { JobStreams } from './streams.js';

/** An integration and its current capability profile, as a client or the operator reads them. */
export interface IntegrationRead {
  readonly integration: IntegrationSnapshot;
  readonly profile: ProbedProfile | undefined;
}

/** A decision on a plain result whose check was for another schema than the job has (or none): checked again against this job. */
interface Unchecked {
  readonly unchecked: JobSnapshot;
}

export class Backend {
  readonly epoch: string;
  private readonly clock: Clock;
  private readonly leaseMs: number;
  /** The limits in force: the engine's own, and the followers the edge counts. */
  readonly quotas: Quotas;
  /** The bound on a job's payload and on its result, in bytes of compact JSON. */
  readonly maxJobBytes: number;
  /** Integrations, their tokens and heartbeats. */
  readonly integrations: Integrations;
  /** Pairings: the messages of both sides, carried in order; the integration each one ends with. */
  readonly pairings: Pairings;
  private readonly projection = new BackendProjection();
  private readonly log: BackendLog<BackendState>;
  private readonly retention: Retention;
  private readonly store: LogJobStore;
  private readonly pubsub: PubSub;
  private readonly afterCommit: AfterCommit<BackendEvent>;
  private readonly timers: JobTimers;
  private readonly streams: JobStreams;
  private readonly followers: JobFollowers;
  private readonly report: (error: unknown, context: FailureContext) => void;
  private readonly resultChecker: ResultChecker;
  private closed = false;

  private constructor(seams: BackendSeams, config: BackendConfig) {
    ({ log: this.log, pubsub: this.pubsub, clock: this.clock, report: this.report } = seams);
    this.leaseMs = config.leaseMs ?? DEFAULT_LEASE_MS;
    this.quotas = quotasOf(config.quotas ?? {}, config.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS);
    this.maxJobBytes = config.maxJobBytes ?? DEFAULT_MAX_JOB_BYTES;
    this.resultChecker = config.resultChecker ?? inlineResultChecker;
    this.epoch = seams.ids.token();
    this.retention = new Retention({
      clock: this.clock,
      retentionMs: config.retentionMs ?? DEFAULT_RETENTION_MS,
      pass: forgetEndedRecords({
        projection: this.projection,
        log: this.log,
        presence: seams.presence,
        clock: this.clock,
        pairingRetentionMs: config.pairingRetentionMs ?? DEFAULT_PAIRING_RETENTION_MS,
        maxSettledJobs: this.quotas.maxSettledJobs,
      }),
      compacted: () => this.log.compacted(),
      report: (error) => this.report(error, { what: 'retention' }),
    });
    this.store = new LogJobStore(this.projection, this.log);
    const keepaliveMs = config.keepaliveMs ?? DEFAULT_KEEPALIVE_MS;
    const background = (work: Promise<unknown>, what: string) => this.background(work, what);
    this.streams = new JobStreams({
      clock: this.clock,
      keepaliveMs,
      store: this.store,
      pubsub: this.pubsub,
      leaseMs: this.leaseMs,
      update: (integrationId, jobId, decide) => this.update(integrationId, jobId, decide),
      background,
      maxOpensPerMinute: this.quotas.maxStreamsPerMinute,
    });
    this.followers = new JobFollowers({ clock: this.clock, keepaliveMs, store: this.store, pubsub: this.pubsub, background });
    this.afterCommit = new AfterCommit((error, what, event) => this.report(error, { what: event === undefined ? what : `${what} (${event.type})` }));
    this.timers = new JobTimers(
      this.clock,
      (job) => background(this.command({ type: 'expire', ...job, at: this.clock.now() }), 'job deadline'),
      (job) => background(this.command({ type: 'release', ...job, at: this.clock.now() }), 'delivery lease'),
    );
    this.integrations = new Integrations(
      this.projection,
      this.log,
      seams.presence,
      this.clock,
      config.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS,
      (integrationId, jobIds, at) =>
        Promise.all(jobIds.map((job_id) => this.command({ type: 'run', integration_id: integrationId, job_id, lease_until: at + this.leaseMs, at }))),
      (work) => background(work, 'offline deadline'),
      this.quotas,
    );
    this.pairings = new Pairings({
      projection: this.projection,
      log: this.log,
      clock: this.clock,
      ids: seams.ids,
      ttlMs: config.pairingTtlMs ?? PAIRING_TTL_MS,
      policy: config.pairing ?? 'ticket',
      limits: pairingLimitsOf(config.pairingLimits),
      attempts: seams.attempts,
      onExpiryFailure: (work) => background(work, 'pairing expiry'),
    });
    this.afterCommit.add({ name: 'integration streams', event: (event) => this.toStream(event) });
    this.afterCommit.add({ name: 'offline deadlines', event: (event) => this.integrations.committed(event) });
    this.afterCommit.add({ name: 'pairing expiries', event: (event) => this.pairings.committed(event) });
    // The store first: a notice's listener reads the job as this event left it.
    this.afterCommit.add({
      name: 'job store',
      event: (event) => (isJobEvent(event) ? this.store.committed(event) : event.type === 'backend.forgotten' && this.store.forgotten(event)),
    });
    this.afterCommit.add({ name: 'jobs', event: (event) => isJobEvent(event) && this.committed(event) });
  }

  /** Folds the log (from its newest good snapshot on), starts a new epoch, and re-arms every open job's deadline and lease from it. */
  static async start(seams: BackendSeams, config: BackendConfig = {}): Promise<Backend> {
    const backend = new Backend(seams, config);
    await backend.log.start({
      codec: backendSnapshotCodec(backend.projection),
      fold: (event) => backend.fold(event),
      foldCommitted: (event) => {
        backend.fold(event);
        if (isJobEvent(event)) backend.store.committed(event);
        // Retention may have left a forgotten job's events in the log (their removal comes after the commit).
        else if (event.type === 'backend.forgotten') backend.store.forgotten(event);
      },
      restore: (state) => {
        backend.projection.restore(state ?? new BackendProjection().state());
        backend.store.restored();
      },
      dispatch: (events, own) => backend.dispatch(events, own),
    });
    const at = backend.clock.now();
    await backend.log.decide(() => ({ events: [{ type: 'backend.started', epoch: backend.epoch, at }], outcome: undefined }));
    for (const job of await backend.store.allOpenJobs()) backend.timers.arm(job);
    backend.integrations.rearm();
    backend.pairings.rearm();
    backend.retention.start();
    return backend;
  }

  /** The position of the newest committed event this node has folded. */
  get position(): number {
    return this.log.position;
  }

  /** Folds what other nodes committed up to now (nothing to do on a log of this process alone): what a request reads next is as fresh as the store. */
  caughtUp(): Promise<void> {
    return this.log.caughtUp();
  }

  // ---- jobs: the client's side ----------------------------------------------------------------------

  /**
   * Creates a job (idempotent by `job_id`); its deadline is the client's `deadline_at` (a BYO job's must
   * be given), else `deadline_ms` from now. A `response_schema` the client sends must compile as a JSON
   * Schema, or the job is refused (`invalid`) before it is logged. A new job while the integration has the
   * most open jobs it may is refused (`over_quota`); the same create again is answered the job first.
   */
  async createJob(integrationId: string, body: JobCreateBody): Promise<JobAnswer> {
    const integration = this.projection.integration(integrationId);
    if (integration === undefined || isRevoked(integration)) return { outcome: 'unknown', job: undefined };
    const refusal = createRefusal(body, integration, this.maxJobBytes);
    if (refusal !== undefined) return { outcome: 'invalid', code: refusal.invalid, job: undefined, message: refusal.message };
    const at = this.clock.now();
    const deadline_at = body.deadline_at === undefined ? at + body.deadline_ms : Date.parse(body.deadline_at);
    const create: JobCommand = {
      type: 'create',
      job_id: body.job_id,
      integration_id: integrationId,
      purpose: body.purpose,
      payload: body.payload,
      byo: body.byo,
      response_schema: body.response_schema ?? jsonSchemaOf(PURPOSES[body.purpose].result),
      provider_kind: integration.context.provider_kind,
      deadline_at,
      at,
    };
    // A client's deadline is judged for a new job only: a retry of one that exists is answered as it stands, whatever the time.
    const fits = deadline_at > at && deadline_at <= at + MAX_DEADLINE_MS + DEADLINE_SKEW_MS;
    const outcome = await this.update<JobOutcome | Invalid | OverQuota>(integrationId, body.job_id, (job) => {
      if (job !== undefined) return jobDecider.decide(create, job);
      if (!fits) return nothing({ invalid: 'invalid_deadline', message: `deadline_at ${body.deadline_at} is not after the backend's clock (${new Date(at).toISOString()}) and within 1 h and 60 s of it` });
      const over = overOpenJobs(this.projection.openJobs(integrationId), this.quotas.maxOpenJobs, at) ?? overJobRate(this.projection.jobsCreated(integrationId), this.quotas.maxJobsPerMinute, at);
      return over === undefined ? jobDecider.decide(create, job) : nothing(over);
    });
    if (typeof outcome === 'object' && 'over' in outcome) return { outcome: 'over_quota', quota: outcome, job: undefined };
    return this.answer(integrationId, body.job_id, outcome);
  }

  /** The integration's job as committed: what a client reads, so that a crash can never take back what it saw. Another integration's job of that id is not it. */
  async committedJob(integrationId: string, jobId: string): Promise<JobSnapshot | undefined> {
    return (await this.store.job(integrationId, jobId))?.job;
  }

  /** The integration and its current capability profile as the log holds them (what its client reads). */
  async committedIntegration(integrationId: string): Promise<IntegrationRead | undefined> {
    await this.log.settled();
    return this.readIntegration(integrationId);
  }

  /** Every integration as the log holds it, oldest first (what the operator lists). */
  async committedIntegrations(): Promise<IntegrationRead[]> {
    await this.log.settled();
    const reads = this.projection.integrationIds().map((id) => this.readIntegration(id)!);
    // The fold's order is not the creation order once retention has compacted some (projection.ts).
    return reads.sort((a, b) => a.integration.context.created_at - b.integration.context.created_at);
  }

  private readIntegration(integrationId: string): IntegrationRead | undefined {
    const integration = this.projection.integration(integrationId);
    return integration === undefined ? undefined : { integration, profile: this.projection.profile(integrationId) };
  }

  /** Why the integration's plugin is refused, if its latest heartbeat was: it takes no jobs then. */
  refusalOf(integrationId: string): CodedError | undefined {
    return this.projection.integration(integrationId)?.context.seen?.refused;
  }

  /** The client cancels one of its integration's jobs. */
  async cancel(integrationId: string, jobId: string): Promise<JobAnswer> {
    const at = this.clock.now();
    const outcome = await this.command({ type: 'cancel', integration_id: integrationId, job_id: jobId, at });
    return this.answer(integrationId, jobId, outcome);
  }

  // ---- jobs: the plugin's side ----------------------------------------------------------------------

  /** The plugin runs the job: its lease runs a full lease from now. */
  async running(integrationId: string, jobId: string): Promise<JobAnswer> {
    const refusal = this.refusalOf(integrationId);
    const at = this.clock.now();
    const outcome = await this.update<JobOutcome | Invalid>(integrationId, jobId, (job) =>
      this.ofIntegration(job, (own): Decision<JobEvent, JobOutcome | Invalid> =>
        refusal === undefined ? jobDecider.decide({ type: 'run', integration_id: integrationId, job_id: jobId, lease_until: at + this.leaseMs, at }, own) : nothing({ invalid: 'plugin_refused', message: refusal.message }),
      ),
    );
    return this.answer(integrationId, jobId, outcome);
  }

  /**
   * The completion endpoint (4.1): a result (checked against `response_schema` unless the job is BYO) or a
   * failure report. A plain result is checked before its decision, outside it (the checker may take its
   * time elsewhere, PROTOCOL.md 6.12); the decision takes the verdict only for the schema it was reached
   * for, and has the job checked again otherwise (a job of that id created meanwhile).
   */
  async result(integrationId: string, jobId: string, body: JobResultBody): Promise<JobAnswer> {
    const bytes = 'result' in body ? jsonBytes(body.result) : 0;
    if (bytes > this.maxJobBytes) return { outcome: 'invalid', code: 'result_too_large', job: undefined, message: overBoundMessage('result', bytes, this.maxJobBytes) };
    let checked: { readonly schema: Record<string, unknown>; readonly problem: string | undefined } | undefined;
    let job = this.projection.job(integrationId, jobId);
    // A job is created once per id until retention forgets it: a third round would need it forgotten and created twice meanwhile.
    for (let round = 0; round < 3; round += 1) {
      if ('result' in body && job !== undefined && !isSettled(job) && !job.context.byo) {
        const schema = job.context.response_schema;
        const verdict = await this.resultChecker.check({ integrationId, schema, result: body.result, bytes });
        if (verdict.outcome === 'busy') return { outcome: 'busy', code: 'too_many_result_checks', retry_after_s: verdict.retry_after_s, message: verdict.message, job: undefined };
        if (verdict.outcome === 'too_costly') return { outcome: 'invalid', code: 'result_check_too_costly', job: await this.committedJob(integrationId, jobId), message: verdict.message };
        checked = { schema, problem: verdict.problem };
      }
      const at = this.clock.now();
      const outcome = await this.update<JobOutcome | Invalid | Unchecked>(integrationId, jobId, (current) =>
        this.ofIntegration(current, (own): Decision<JobEvent, JobOutcome | Invalid | Unchecked> => {
          if ('error' in body) return jobDecider.decide({ type: 'fail', integration_id: integrationId, job_id: jobId, error: body.error, at }, own);
          const complete = () => jobDecider.decide({ type: 'complete', integration_id: integrationId, job_id: jobId, result: body.result, at }, own);
          // A BYO result is an envelope the backend never reads inside; a plain one follows the job's schema. A settled job's answer says so first.
          if (isSettled(own)) return complete();
          if (own.context.byo) return ByoEnvelope.safeParse(body.result).success ? complete() : nothing({ invalid: 'result_invalid', message: 'the result of a BYO job must be a BYO envelope' });
          if (checked?.schema !== own.context.response_schema) return nothing({ unchecked: own });
          return checked.problem === undefined ? complete() : nothing({ invalid: 'result_invalid', message: checked.problem });
        }),
      );
      if (typeof outcome !== 'object' || !('unchecked' in outcome)) return this.answer(integrationId, jobId, outcome);
      job = outcome.unchecked;
    }
    throw new Error(`the job ${jobId} changed under its result's check three times`);
  }

  /**
   * Opens the integration's stream; a second one takes over from the first (`JobStreams`). That this node
   * holds it is in the log first, so that a stream another node holds ends when that node folds it.
   * A rotation not yet answered is sent on it. `undefined`: the integration is unknown or revoked; an
   * `OverQuota`: it opened too many on this node this minute (nothing is logged, no stream is taken over).
   */
  async openStream(integrationId: string, cursor: number | undefined, connect: () => SubscriberTransport): Promise<SubscriptionActor | OverQuota | undefined> {
    if (this.closed) throw new HostClosingError();
    const over = this.streams.admit(integrationId);
    if (over !== undefined) return over;
    let held: boolean;
    try {
      held = await this.integrations.holdStream(integrationId, this.epoch);
    } catch (error) {
      // Refused for the store (503): it logged and delivered nothing, so it does not count against the plugin's opens.
      this.streams.unadmit(integrationId);
      throw error;
    }
    if (this.closed) throw new HostClosingError();
    if (!held) return undefined;
    // Opened in the step the decision resolves in: a takeover logged after it is dispatched later, and ends this stream.
    const actor = this.streams.open(integrationId, cursor, connect);
    const rekey = this.projection.integration(integrationId)?.context.rekey;
    if (rekey !== undefined && rekey.answer === undefined) actor.push([rekeyFrame(rekey)]);
    return actor;
  }

  /**
   * A client follows a committed job: it is sent the job now (unless its cursor shows this version) and
   * after each change, until it leaves or the backend closes.
   */
  follow(job: JobSnapshot, cursor: number | undefined, connect: () => SubscriberTransport, render: RenderJob): SubscriptionActor {
    return this.followers.open(job, cursor, connect, render);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.timers.stop();
    this.integrations.stop();
    this.pairings.stop();
    this.streams.closeAll();
    this.followers.closeAll();
    await this.retention.stop();
    await this.log.close();
  }

  // ---- the loop ----------------------------------------------------------------------------------

  private fold(event: BackendEvent): void {
    this.projection.apply(event);
    if (isJobEvent(event)) this.store.folded(event);
  }

  private update<Outcome>(integrationId: string, jobId: string, decide: JobDecide<Outcome>): Promise<Outcome> {
    // Nothing new enters the log of a closing backend; the edge answers 503 `shutting_down`.
    if (this.closed) return Promise.reject(new HostClosingError());
    return this.store.update(integrationId, jobId, decide);
  }

  private command(command: JobCommand): Promise<JobOutcome> {
    return this.update(command.integration_id, command.job_id, (job) => jobDecider.decide(command, job));
  }

  /** A decision on a job that exists (the store found it by integration and id); any other is unknown before anything else is checked. */
  private ofIntegration<Outcome>(job: JobSnapshot | undefined, decide: (job: JobSnapshot) => Decision<JobEvent, Outcome>): Decision<JobEvent, Outcome | 'unknown'> {
    return job === undefined ? nothing('unknown') : decide(job);
  }

  /** The answer to a command: its outcome and the job as committed now. */
  private async answer(integrationId: string, jobId: string, outcome: JobOutcome | Invalid): Promise<JobAnswer> {
    const job = await this.committedJob(integrationId, jobId);
    if (typeof outcome === 'object') return { outcome: 'invalid', code: outcome.invalid, job, message: outcome.message };
    return { outcome, job: outcome === 'unknown' ? undefined : job };
  }

  /** Committed events: the after-commit handlers; and, for a channel that reaches other nodes, news of this node's for them. */
  private dispatch(events: readonly BackendEvent[], own: boolean): void {
    this.afterCommit.dispatch(events);
    if (!own || this.pubsub.announce === undefined) return;
    const integrations = new Set(events.flatMap((event) => ('integration_id' in event ? [event.integration_id] : [])));
    for (const id of integrations) this.pubsub.announce(id);
  }

  /** What an integration's stream hears besides its jobs, once committed. */
  private toStream(event: BackendEvent): void {
    // A revoked integration's stream ends at once: its plugin must not wait for its next heartbeat to hear it.
    if (event.type === 'integration.revoked') this.streams.end(event.integration_id);
    // Only the log hands the stream to another node: a notice on the broker cannot.
    if (event.type === 'integration.stream_held' && event.node !== this.epoch) this.streams.supersede(event.integration_id);
    if (event.type === 'integration.rekey_requested') this.streams.push(event.integration_id, rekeyFrame(this.projection.integration(event.integration_id)!.context.rekey!));
  }

  /** Once committed: the job's timers follow it, and its integration's topic hears of it. */
  private committed(event: JobEvent): void {
    this.timers.committed(event);
    this.pubsub.publish(assistantChannel(event.integration_id), noticeOf(event));
  }

  private background(work: Promise<unknown>, what: string): void {
    inBackground(work, this.report, { what });
  }
}

function noticeOf(event: JobEvent): JobNotice {
  return event.type === 'job.delivered' ? { job_id: event.job_id, type: event.type, seq: event.seq } : { job_id: event.job_id, type: event.type };
}
