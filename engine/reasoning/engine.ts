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
 * choice. On a shared log, partitioned by integration, a node folds the integrations it serves and
 * dispatches each commit of theirs once, its own and the others'; an integration's deadlines, leases and
 * offline deadline run on its owner (ownership.ts, owned-integrations.ts), and a dead owner's are taken
 * over; a channel that reaches the other nodes is told of this node's commits, so that they fold them at
 * once (loop.ts).
 */
import type { CodedError, JobCreateBody, JobResultBody } from '../../protocol/index.js';
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import type { IntegrationSnapshot } from '../../machines/reasoning/integration.js';
import { quotasOf, type OverQuota, type Quotas } from '../../machines/reasoning/quotas.js';
import type { JobSnapshot } from '../../machines/reasoning/job.js';
import type { Clock } from '../core/clock.js';
import { inBackground, type FailureContext } from '../core/failures.js';
import { DEFAULT_RETENTION_MS, Retention } from '../core/retention.js';
import type { SubscriberTransport, SubscriptionActor } from '../core/subscription-actor.js';
import type { BackendLog } from './backend-log.js';
import { DEFAULT_KEEPALIVE_MS, DEFAULT_MAX_JOB_BYTES, livenessOf, type ReasoningEngineConfig } from './config.js';
import { JobFollowers, type RenderJob } from './followers.js';
import { backendGauges, type BackendGauges } from './gauges.js';
import { HeldStreams } from './held-streams.js';
import { Integrations } from './integrations.js';
import type { JobAnswer } from './job-answers.js';
import { JobCommands } from './job-commands.js';
import { LogJobStore } from './job-store.js';
import { JobTimers } from './job-timers.js';
import { backendLoop, type CommitListener } from './loop.js';
import { pairingLimitsOf } from './pairing-limits.js';
import { PAIRING_TTL_MS, Pairings } from './pairings.js';
import { inlineResultChecker } from './result-check.js';
import { BackendProjection } from './projection.js';
import type { BackendState, ProbedProfile } from './backend-state.js';
import type { PubSub } from './pubsub.js';
import { DEFAULT_PAIRING_RETENTION_MS, forgetEndedRecords } from './retention.js';
import { OWNER } from './backend-log.js';
import { keepOwnedIntegrations } from './owned-integrations.js';
import type { Ownership } from './ownership.js';
import { BackendRekeys } from './rekeys.js';
import type { BackendSeams } from './seams.js';
import { JobStreams } from './streams.js';
import { SERVICE_PARTITION } from '../../storage/partitions.js';

/** An integration and its current capability profile, as a client or the operator reads them. */
export interface IntegrationRead {
  readonly integration: IntegrationSnapshot;
  readonly profile: ProbedProfile | undefined;
}

export class ReasoningEngine {
  readonly epoch: string;
  private readonly clock: Clock;
  /** The limits in force: the engine's own, and the followers the edge counts. */
  readonly quotas: Quotas;
  /** The bound on a job's payload and on its result, in bytes of compact JSON. */
  readonly maxJobBytes: number;
  /** Integrations, their tokens and heartbeats. */
  readonly integrations: Integrations;
  /** Key rotations: the client's requests and the plugin's answers, carried (rekeys.ts). */
  readonly rekeys: BackendRekeys;
  /** Pairings: the messages of both sides, carried in order; the integration each one ends with. */
  readonly pairings: Pairings;
  private readonly projection = new BackendProjection();
  private readonly log: BackendLog<BackendState>;
  private readonly retention: Retention;
  private readonly store: LogJobStore;
  private readonly jobs: JobCommands;
  private readonly pubsub: PubSub;
  private readonly ownership: Ownership;
  private readonly timers: JobTimers;
  private readonly streams: JobStreams;
  private readonly held: HeldStreams;
  private readonly followers: JobFollowers;
  private readonly report: (error: unknown, context: FailureContext) => void;
  private readonly listeners = new Set<CommitListener>();
  private closed = false;

  private constructor(seams: BackendSeams, config: ReasoningEngineConfig) {
    ({ log: this.log, pubsub: this.pubsub, clock: this.clock, report: this.report, ownership: this.ownership } = seams);
    const liveness = livenessOf(config);
    const { leaseMs } = liveness;
    this.quotas = quotasOf(config.quotas ?? {}, liveness.heartbeatIntervalMs);
    this.maxJobBytes = config.maxJobBytes ?? DEFAULT_MAX_JOB_BYTES;
    this.epoch = seams.node;
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
        served: () => this.projection.integrationIds().filter((id) => this.ownership.owns(id)),
      }),
      compacted: () => this.log.compacted(),
      report: (error) => this.report(error, { what: 'retention' }),
    });
    this.store = new LogJobStore(this.projection, this.log);
    const { projection, store, clock, quotas, maxJobBytes } = this;
    const resultChecker = config.resultChecker ?? inlineResultChecker;
    this.jobs = new JobCommands({ projection, store, clock, leaseMs, quotas, maxJobBytes, resultChecker, closed: () => this.closed });
    const keepaliveMs = config.keepaliveMs ?? DEFAULT_KEEPALIVE_MS;
    const background = (work: Promise<unknown>, what: string) => this.background(work, what);
    this.streams = new JobStreams({
      clock: this.clock,
      keepaliveMs,
      store: this.store,
      pubsub: this.pubsub,
      leaseMs,
      update: (integrationId, jobId, decide, options) => this.jobs.update(integrationId, jobId, decide, options),
      background,
      maxOpensPerMinute: this.quotas.maxStreamsPerMinute,
    });
    this.followers = new JobFollowers({ clock: this.clock, keepaliveMs, store: this.store, pubsub: this.pubsub, background });
    this.timers = new JobTimers(
      this.clock,
      (job) => background(this.jobs.command({ type: 'expire', ...job, at: this.clock.now() }, OWNER), 'job deadline'),
      (job) => background(this.jobs.command({ type: 'release', ...job, at: this.clock.now() }, OWNER), 'delivery lease'),
    );
    this.integrations = new Integrations(
      this.projection,
      this.log,
      seams.presence,
      this.clock,
      liveness,
      (integrationId, jobIds, at) =>
        Promise.all(
          jobIds.map((job_id) => this.jobs.command({ type: 'run', integration_id: integrationId, job_id, lease_until: at + leaseMs, at })),
        ),
      (work) => background(work, 'offline deadline'),
      this.quotas,
      (integrationId) => this.ownership.owns(integrationId),
    );
    this.rekeys = new BackendRekeys({ projection: this.projection, log: this.log, clock: this.clock, quotas: this.quotas });
    const { streams, integrations } = this;
    this.held = new HeldStreams({
      streams,
      integrations,
      projection,
      ownership: this.ownership,
      node: this.epoch,
      closed: () => this.closed,
    });
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
  }

  /** Folds the log (from its newest good snapshot on), starts a new epoch, and re-arms every open job's deadline and lease from it. */
  static async start(seams: BackendSeams, config: ReasoningEngineConfig = {}): Promise<ReasoningEngine> {
    const backend = new ReasoningEngine(seams, config);
    const { projection, store, timers, held, integrations, pairings, pubsub, report, listeners, ownership, streams, followers } = backend;
    const loop = { projection, store, timers, held, integrations, pairings, pubsub, report, listeners, ownership, streams, followers };
    await backend.log.start(backendLoop(loop));
    const background = (work: Promise<unknown>, what: string) => backend.background(work, what);
    keepOwnedIntegrations({ log: backend.log, projection, ownership, pubsub, timers, integrations, streams, background });
    const started: BackendEvent = { type: 'backend.started', epoch: backend.epoch, at: backend.clock.now() };
    await backend.log.decide(SERVICE_PARTITION, () => ({ events: [started], outcome: undefined }));
    // A log of one process holds every integration, all of them its own; a partitioned one none yet (leases bring them).
    for (const job of await backend.store.allOpenJobs()) backend.timers.arm(job);
    backend.integrations.rearm();
    backend.pairings.rearm();
    backend.retention.start();
    return backend;
  }

  /** How far this node has folded: the log's position (on a partitioned log, the service partition's version). */
  get position(): number {
    return this.log.position;
  }

  /** Jobs by state, integrations, and this node's streams and followers now: what an operator's scrape reads. */
  gauges(): BackendGauges {
    return backendGauges(this.projection.state(), (id) => this.ownership.owns(id), this.streams.count, this.followers.count);
  }

  /** Hears every committed batch once, `own` when this node decided it (what its counters count). Returns an unsubscribe function. */
  onCommitted(listener: CommitListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Folds what other nodes committed up to now of the integration's partition, or of the service's without
   * one (nothing to do on a log of this process alone): what a request reads next is as fresh as the store.
   */
  caughtUp(integrationId?: string): Promise<void> {
    return this.log.caughtUp(integrationId ?? SERVICE_PARTITION);
  }

  // ---- jobs: the client's side and the plugin's (job-commands.ts) ---------------------------------------

  /** Creates a job (idempotent by `job_id`), or refuses it before it is logged. */
  createJob(integrationId: string, body: JobCreateBody): Promise<JobAnswer> {
    return this.jobs.create(integrationId, body);
  }

  /** The integration's job as committed: what a client reads, so that a crash can never take back what it saw. */
  committedJob(integrationId: string, jobId: string): Promise<JobSnapshot | undefined> {
    return this.jobs.committed(integrationId, jobId);
  }

  /** The client cancels one of its integration's jobs. */
  cancel(integrationId: string, jobId: string): Promise<JobAnswer> {
    return this.jobs.cancel(integrationId, jobId);
  }

  /** The plugin runs the job: its lease runs a full lease from now. */
  running(integrationId: string, jobId: string): Promise<JobAnswer> {
    return this.jobs.running(integrationId, jobId);
  }

  /** The completion endpoint (4.1): a result (checked against `response_schema` unless the job is BYO) or a failure report. */
  result(integrationId: string, jobId: string, body: JobResultBody): Promise<JobAnswer> {
    return this.jobs.result(integrationId, jobId, body);
  }

  // ---- integrations, streams and followers ------------------------------------------------------------

  /** The integration and its current capability profile as the log holds them (what its client reads). */
  async committedIntegration(integrationId: string): Promise<IntegrationRead | undefined> {
    await this.log.settled();
    await this.log.hold(integrationId);
    return this.readIntegration(integrationId);
  }

  /** Every integration as the log holds it, oldest first (what the operator lists). */
  async committedIntegrations(): Promise<IntegrationRead[]> {
    await this.log.settled();
    const stored = await this.log.storedIntegrations();
    // On a partitioned log each is loaded in turn (and let go again when idle, within the holds' bound).
    for (const id of stored ?? []) await this.log.caughtUp(id);
    const reads = (stored ?? this.projection.integrationIds()).flatMap((id) => this.readIntegration(id) ?? []);
    // The fold's order is not the creation order once retention has compacted some (projection.ts).
    return reads.sort((a, b) => a.integration.context.created_at - b.integration.context.created_at);
  }

  private readIntegration(integrationId: string): IntegrationRead | undefined {
    const integration = this.projection.integration(integrationId);
    return integration === undefined ? undefined : { integration, profile: this.projection.profile(integrationId) };
  }

  /** Why the integration's plugin is refused, if its latest heartbeat was: it takes no jobs then. */
  refusalOf(integrationId: string): CodedError | undefined {
    return this.jobs.refusalOf(integrationId);
  }

  /** Opens the integration's stream, held by this node; a second one takes over from the first (held-streams.ts). */
  openStream(
    integrationId: string,
    cursor: number | undefined,
    connect: () => SubscriberTransport,
  ): Promise<SubscriptionActor | OverQuota | undefined> {
    return this.held.open(integrationId, cursor, connect);
  }

  /** A client follows a committed job: sent it now (unless its cursor shows this version) and after each change. */
  follow(job: JobSnapshot, cursor: number | undefined, connect: () => SubscriberTransport, render: RenderJob): SubscriptionActor {
    return this.followers.open(job, cursor, connect, render);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.timers.stop();
    // Streams are told to reconnect first (their plugins move at once); the leases are given up after.
    this.streams.closeAll();
    this.followers.closeAll();
    await this.ownership.stop();
    this.integrations.stop();
    this.pairings.stop();
    await this.retention.stop();
    await this.log.close();
  }

  private background(work: Promise<unknown>, what: string): void {
    inBackground(work, this.report, { what });
  }
}
