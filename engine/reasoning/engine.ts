/**
 * The backend relay's engine (1.1, 1.3, 4.1, 6.1): integrations, and the reasoning jobs it relays to each
 * integration's plugin over one live stream. Built from the host's parts: the event log (append first, act
 * after), `AfterCommit`, the `Clock`, `Deadlines` (job deadlines and delivery leases, re-armed from the
 * fold on start) and `SubscriptionActor` (the stream). Jobs are kept through the `JobStore` seam and their
 * changes travel through the `PubSub` seam: the engine decides with the pure job decider and reads through
 * those two alone. A payload or result that is a BYO envelope is relayed as it came: the backend never
 * reads inside it.
 *
 * Its log is the embedded SQLite one of this process, or PostgreSQL shared by several nodes (`BackendLog`).
 * On a shared log every node folds every event and dispatches it once, its own and the others', so
 * deadlines, leases and offline deadlines are kept on every node and a node's death loses no timer; the
 * `broker` carries between nodes what makes them react at once (channel.ts), `Presence` the heartbeats.
 */
import { z } from 'zod';
import { ByoEnvelope, DEADLINE_SKEW_MS, HTTP_ERRORS, MAX_DEADLINE_MS, PURPOSES, jsonBytes, jsonSchemaOf, type CodedError, type JobCreateBody, type JobResultBody } from '../../protocol/index.js';
import { ResponseSchemaError, checkResponseSchema } from '../../protocol/response-schema.js';
import { isJobEvent, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { nothing, type Decision } from '../../machines/core/decider.js';
import { isRevoked, type IntegrationSnapshot } from '../../machines/reasoning/integration.js';
import { jobDecider, type JobCommand, type JobOutcome } from '../../machines/reasoning/job-decider.js';
import { overJobRate, overOpenJobs, quotasOf, type OverQuota, type Quotas } from '../../machines/reasoning/quotas.js';
import { jobKey, jobRefOf, type JobEvent } from '../../machines/reasoning/job-events.js';
import { isSettled, type JobSnapshot } from '../../machines/reasoning/job.js';
import { EventLog } from '../../storage/event-log.js';
import type { PgEventLog } from '../../storage/postgres/event-log.js';
import { PgPairingAttempts, PgPresence } from '../../storage/postgres/presence.js';
import { AfterCommit } from '../core/after-commit.js';
import { randomIds, systemClock, type Clock, type IdSource, type TimerHandle } from '../core/clock.js';
import type { FailureContext } from '../core/failures.js';
import { Deadlines } from '../core/deadlines.js';
import { HostClosingError, inBackground } from '../core/failures.js';
import { DEFAULT_RETENTION_MS, Retention } from '../core/retention.js';
import type { SubscriberTransport, SubscriptionActor } from '../core/subscription-actor.js';
import { LocalBackendLog, type BackendLog } from './backend-log.js';
import { ClusterChannel } from './channel.js';
import { JobFollowers, type RenderJob } from './followers.js';
import { rekeyFrame } from './frames.js';
import { Integrations } from './integrations.js';
import { LogJobStore, type JobDecide } from './job-store.js';
import { pairingLimitsOf, type PairingLimits, type PairingPolicy } from './pairing-limits.js';
import { PAIRING_TTL_MS, Pairings } from './pairings.js';
import { inlineResultChecker, type ResultChecker } from './result-check.js';
import { LocalPairingAttempts, LocalPresence, type PairingAttempts, type Presence } from './presence.js';
import { BackendProjection, type BackendState, type ProbedProfile } from './projection.js';
import { LocalPubSub, assistantChannel, type JobNotice, type PubSub } from './pubsub.js';
import { DEFAULT_PAIRING_RETENTION_MS, forgetEndedRecords } from './retention.js';
import { SharedBackendLog } from './shared-log.js';
import { backendSnapshotCodec } from './snapshot.js';
import { JobStreams } from './streams.js';

/** Where the backend keeps its log: an embedded SQLite file, or PostgreSQL shared by several nodes. */
export type BackendStore = EventLog<BackendEvent> | PgEventLog<BackendEvent>;

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
  /** How long an open pairing waits for its next message before it expires. Default 10 minutes. */
  readonly pairingTtlMs?: number;
  /** Who may create an integration by pairing (PROTOCOL.md 7.8): `ticket` (the default), only a start with a ticket the operator issued; `open`, anyone who reaches the backend. */
  readonly pairing?: PairingPolicy;
  /** What one source may do with pairings, and open pairings in all (pairing-limits.ts; defaults in PROTOCOL.md 7.8). */
  readonly pairingLimits?: Partial<PairingLimits>;
  /** Where a committed job change is published for streams and followers (default: this process alone). On a shared log, `broker` is given instead. */
  readonly pubsub?: PubSub;
  /** On a shared log: the broker that carries the `assistant_channel` between nodes (channel.ts). Without one, nodes learn of each other's commits at their next look. */
  readonly broker?: PubSub;
  /** On a shared log: how often a node looks for what other nodes committed, whatever the broker says. Default 1 s. */
  readonly lookEveryMs?: number;
  /** On a shared log: decisions waiting for the store at most; one more is answered 503 `store_unavailable`. Default 10,000. */
  readonly maxQueuedDecisions?: number;
  /** Committed events between two snapshots of the fold (engine/snapshots.ts). Default 50,000. */
  readonly snapshotEveryEvents?: number;
  /** Jobs settled, integrations revoked and pairings ended longer ago than this are forgotten and their events removed (engine/retention.ts). Default 7 days; `Infinity` keeps everything. */
  readonly retentionMs?: number;
  /** What one integration may make the backend hold or log (machines/quotas.ts has the defaults). */
  readonly quotas?: Partial<Quotas>;
  /** Pairings are forgotten this long after their expiry, once ended, if that is sooner than `retentionMs` (backend/retention.ts). Default 1 hour. */
  readonly pairingRetentionMs?: number;
  /** A job's payload, and its result, at most this many bytes of compact JSON (a BYO job's: its envelope); past it, 413. Default 1 MiB. */
  readonly maxJobBytes?: number;
  /** Checks a plain result against its job's schema (PROTOCOL.md 6.12); default: at once, on this thread. `createBackendRelay` gives one that runs costly checks in worker threads. */
  readonly resultChecker?: ResultChecker;
  readonly onFatal?: (error: unknown) => void;
  readonly onError?: (error: unknown, context: FailureContext) => void;
}

export const DEFAULT_LEASE_MS = 90_000;
export const HEARTBEAT_INTERVAL_MS = 30_000;
/** The capability profile's default `max_payload_bytes`: what a plugin takes unless it says otherwise. */
export const DEFAULT_MAX_JOB_BYTES = 1024 * 1024;

export type JobAnswer =
  | { readonly outcome: JobOutcome; readonly job: JobSnapshot | undefined }
  /**
   * Refused before anything was logged: a create's payload that does not fit its purpose (or is not a BYO
   * envelope for a BYO job) or `response_schema` that does not compile or is beyond the bounds; a plain result
   * that does not follow the job's schema (the job stays open); a plugin its heartbeat was refused; a payload
   * or a result over `maxJobBytes`; a plain result the checker could not check within its budget (the job stays open).
   */
  | {
      readonly outcome: 'invalid';
      readonly code: 'invalid_payload' | 'invalid_response_schema' | 'unsupported_response_schema' | 'result_invalid' | 'plugin_refused' | 'byo_required' | 'invalid_deadline' | 'payload_too_large' | 'result_too_large' | 'result_check_too_costly';
      readonly job: JobSnapshot | undefined;
      readonly message: string;
    }
  /** Refused for load before anything was logged: the integration has the most open jobs it may. */
  | { readonly outcome: 'over_quota'; readonly quota: OverQuota; readonly job: undefined }
  /** Refused for load before anything was logged: the result checker takes no more now (PROTOCOL.md 6.12). */
  | { readonly outcome: 'busy'; readonly code: 'too_many_result_checks'; readonly retry_after_s: number; readonly message: string; readonly job: undefined };

type InvalidCode = Extract<JobAnswer, { outcome: 'invalid' }>['code'];

/** What a decision refused before anything was logged, and why. */
interface Invalid {
  readonly invalid: InvalidCode;
  readonly message: string;
}

/** A decision on a plain result whose check was for another schema than the job has (or none): checked again against this job. */
interface Unchecked {
  readonly unchecked: JobSnapshot;
}

export class Backend {
  readonly epoch: string;
  private readonly clock: Clock;
  private readonly ids: IdSource;
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
  /** On a shared log: the next look for what other nodes committed. */
  private look: TimerHandle;
  private readonly lookEveryMs: number | undefined;
  private readonly store: LogJobStore;
  private readonly pubsub: PubSub;
  private readonly afterCommit: AfterCommit<BackendEvent>;
  /** By `jobKey`, as are leases. */
  private readonly deadlines: Deadlines<string>;
  private readonly leases: Deadlines<string>;
  private readonly streams: JobStreams;
  private readonly followers: JobFollowers;
  private readonly report: (error: unknown, context: FailureContext) => void;
  private readonly resultChecker: ResultChecker;
  private closed = false;

  private constructor(store: BackendStore, config: BackendConfig) {
    this.clock = config.clock ?? systemClock;
    this.ids = config.ids ?? randomIds;
    this.leaseMs = config.leaseMs ?? DEFAULT_LEASE_MS;
    this.quotas = quotasOf(config.quotas ?? {}, config.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS);
    this.maxJobBytes = config.maxJobBytes ?? DEFAULT_MAX_JOB_BYTES;
    this.resultChecker = config.resultChecker ?? inlineResultChecker;
    this.epoch = this.ids.token();
    this.report = config.onError ?? ((error, context) => process.emitWarning(`assistant-relay backend: ${context.what} failed: ${String(error)}`));
    const subscriberFailed = (error: unknown, topic: string) => this.report(error, { what: `a subscriber of ${topic}` });
    let presence: Presence;
    let attempts: PairingAttempts;
    const pairingLimits = pairingLimitsOf(config.pairingLimits);
    const attemptsKeepMs = Math.max(pairingLimits.startWindowMs, pairingLimits.missWindowMs);
    if (store instanceof EventLog) {
      if (config.broker !== undefined) throw new Error('a broker carries the channel between nodes that share a PostgreSQL log: this backend has its own');
      this.log = new LocalBackendLog(store, {
        codec: backendSnapshotCodec(this.projection),
        clock: this.clock,
        ...(config.snapshotEveryEvents !== undefined ? { snapshotEveryEvents: config.snapshotEveryEvents } : {}),
        onFatal: config.onFatal ?? ((error) => process.nextTick(() => { throw error; })),
        report: this.report,
      });
      this.pubsub = config.pubsub ?? new LocalPubSub(subscriberFailed);
      presence = new LocalPresence();
      attempts = new LocalPairingAttempts(attemptsKeepMs);
    } else {
      this.log = new SharedBackendLog(store, {
        codec: backendSnapshotCodec(this.projection),
        clock: this.clock,
        report: this.report,
        ...(config.maxQueuedDecisions !== undefined ? { maxQueued: config.maxQueuedDecisions } : {}),
        ...(config.snapshotEveryEvents !== undefined ? { snapshotEveryEvents: config.snapshotEveryEvents } : {}),
      });
      this.lookEveryMs = config.lookEveryMs ?? 1_000;
      const caughtUp = () => this.background(this.log.caughtUp(), 'folding what other nodes committed');
      this.pubsub = config.broker === undefined ? new LocalPubSub(subscriberFailed) : new ClusterChannel(config.broker, caughtUp, subscriberFailed);
      presence = new PgPresence(store.connections);
      attempts = new PgPairingAttempts(store.connections, attemptsKeepMs);
    }
    this.retention = new Retention({
      clock: this.clock,
      retentionMs: config.retentionMs ?? DEFAULT_RETENTION_MS,
      pass: forgetEndedRecords({ projection: this.projection, log: this.log, presence, clock: this.clock, pairingRetentionMs: config.pairingRetentionMs ?? DEFAULT_PAIRING_RETENTION_MS, maxSettledJobs: this.quotas.maxSettledJobs }),
      compacted: () => this.log.compacted(),
      report: (error) => this.report(error, { what: 'retention' }),
    });
    this.store = new LogJobStore(this.projection, this.log);
    const keepaliveMs = config.keepaliveMs ?? 20_000;
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
    this.deadlines = new Deadlines(this.clock, (key) => this.background(this.command({ type: 'expire', ...jobRefOf(key), at: this.clock.now() }), 'job deadline'));
    this.leases = new Deadlines(this.clock, (key) => this.background(this.command({ type: 'release', ...jobRefOf(key), at: this.clock.now() }), 'delivery lease'));
    this.integrations = new Integrations(
      this.projection,
      this.log,
      presence,
      this.clock,
      config.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS,
      (integrationId, jobIds, at) =>
        Promise.all(jobIds.map((job_id) => this.command({ type: 'run', integration_id: integrationId, job_id, lease_until: at + this.leaseMs, at }))),
      (work) => this.background(work, 'offline deadline'),
      this.quotas,
    );
    this.pairings = new Pairings({
      projection: this.projection,
      log: this.log,
      clock: this.clock,
      ids: this.ids,
      ttlMs: config.pairingTtlMs ?? PAIRING_TTL_MS,
      policy: config.pairing ?? 'ticket',
      limits: pairingLimits,
      attempts,
      onExpiryFailure: (work) => this.background(work, 'pairing expiry'),
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
  static async start(store: BackendStore, config: BackendConfig = {}): Promise<Backend> {
    const backend = new Backend(store, config);
    await backend.log.start({
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
    for (const job of await backend.store.allOpenJobs()) backend.arm(job);
    backend.integrations.rearm();
    backend.pairings.rearm();
    backend.retention.start();
    backend.lookAgain();
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
    // A paired integration's plugin takes only sealed jobs (PROTOCOL.md 7.13): a plain one could never run.
    if (integration.context.paired && !body.byo) return { outcome: 'invalid', code: 'byo_required', job: undefined, message: HTTP_ERRORS.byo_required.message };
    const tooLarge = this.overBound('payload', body.payload);
    if (tooLarge !== undefined) return { outcome: 'invalid', code: 'payload_too_large', job: undefined, message: tooLarge };
    const payload = body.byo ? ByoEnvelope.safeParse(body.payload) : PURPOSES[body.purpose].payload.safeParse(body.payload);
    if (!payload.success) return { outcome: 'invalid', code: 'invalid_payload', job: undefined, message: z.prettifyError(payload.error) };
    if (body.response_schema !== undefined) {
      try {
        checkResponseSchema(body.response_schema);
      } catch (error) {
        if (!(error instanceof ResponseSchemaError)) throw error;
        return { outcome: 'invalid', code: error.code, job: undefined, message: error.message };
      }
    }
    // A BYO job's deadline is bound into its envelope, so the client chooses it (PROTOCOL.md 6.7, 7.3).
    if (body.byo && body.deadline_at === undefined) return { outcome: 'invalid', code: 'invalid_deadline', job: undefined, message: 'a BYO job needs deadline_at: its envelope binds it' };
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
    if (bytes > this.maxJobBytes) return { outcome: 'invalid', code: 'result_too_large', job: undefined, message: this.overBoundMessage('result', bytes) };
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
    this.clock.clearTimeout(this.look);
    this.deadlines.stop();
    this.leases.stop();
    this.integrations.stop();
    this.pairings.stop();
    this.streams.closeAll();
    this.followers.closeAll();
    await this.retention.stop();
    await this.log.close();
  }

  /** Why a job's payload or result is over `maxJobBytes`, or `undefined`. */
  private overBound(what: 'payload' | 'result', value: unknown): string | undefined {
    const bytes = jsonBytes(value);
    return bytes > this.maxJobBytes ? this.overBoundMessage(what, bytes) : undefined;
  }

  private overBoundMessage(what: 'payload' | 'result', bytes: number): string {
    return `the job's ${what} is ${bytes} bytes of JSON, more than the ${this.maxJobBytes} this backend takes`;
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

  /** Committed events: the after-commit handlers; and, on a shared log, news for the nodes following their integrations. */
  private dispatch(events: readonly BackendEvent[], own: boolean): void {
    this.afterCommit.dispatch(events);
    if (!own || !(this.pubsub instanceof ClusterChannel)) return;
    const integrations = new Set(events.flatMap((event) => ('integration_id' in event ? [event.integration_id] : [])));
    for (const id of integrations) this.pubsub.publish(assistantChannel(id), { type: 'log.appended' });
  }

  /** On a shared log: the next look for what other nodes committed (what the broker did not tell, or could not). */
  private lookAgain(): void {
    if (this.lookEveryMs === undefined || this.closed) return;
    this.look = this.clock.setTimeout(() => {
      this.log.caughtUp().then(
        () => this.lookAgain(),
        () => this.lookAgain(),
      );
    }, this.lookEveryMs);
  }

  /** What an integration's stream hears besides its jobs, once committed. */
  private toStream(event: BackendEvent): void {
    // A revoked integration's stream ends at once: its plugin must not wait for its next heartbeat to hear it.
    if (event.type === 'integration.revoked') this.streams.end(event.integration_id);
    // Only the log hands the stream to another node: a notice on the broker cannot.
    if (event.type === 'integration.stream_held' && event.node !== this.epoch) this.streams.supersede(event.integration_id);
    if (event.type === 'integration.rekey_requested') this.streams.push(event.integration_id, rekeyFrame(this.projection.integration(event.integration_id)!.context.rekey!));
  }

  /** Once committed: deadlines and leases follow the job, and its integration's topic hears of it. */
  private committed(event: JobEvent): void {
    const key = jobKey(event.integration_id, event.job_id);
    switch (event.type) {
      case 'job.created':
        this.deadlines.set(key, event.deadline_at);
        break;
      case 'job.delivered':
      case 'job.started':
      case 'job.renewed':
        this.leases.set(key, event.lease_until);
        break;
      case 'job.released':
        this.leases.delete(key);
        break;
      default:
        this.deadlines.delete(key);
        this.leases.delete(key);
    }
    this.pubsub.publish(assistantChannel(event.integration_id), noticeOf(event));
  }

  /** Sets the job's deadline, and its lease while it has one. */
  private arm(job: JobSnapshot): void {
    const { integration_id, job_id, deadline_at, lease_until } = job.context;
    this.deadlines.set(jobKey(integration_id, job_id), deadline_at);
    if (lease_until !== undefined) this.leases.set(jobKey(integration_id, job_id), lease_until);
  }

  private background(work: Promise<unknown>, what: string): void {
    inBackground(work, this.report, { what });
  }
}

function noticeOf(event: JobEvent): JobNotice {
  return event.type === 'job.delivered' ? { job_id: event.job_id, type: event.type, seq: event.seq } : { job_id: event.job_id, type: event.type };
}
