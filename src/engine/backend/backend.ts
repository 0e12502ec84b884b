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
import { ByoEnvelope, PURPOSES, jsonSchemaOf, type CodedError, type JobCreateBody, type JobResultBody } from '../../protocol/index.js';
import { checkResponseSchema, resultProblems } from '../../protocol/response-schema.js';
import { isJobEvent, type BackendEvent } from '../../machines/backend-events.js';
import { nothing, type Decision } from '../../machines/decider.js';
import { isRevoked, type IntegrationSnapshot } from '../../machines/integration.js';
import { jobDecider, type JobCommand, type JobOutcome } from '../../machines/job-decider.js';
import { jobKey, jobRefOf, type JobEvent } from '../../machines/job-events.js';
import { isSettled, type JobSnapshot } from '../../machines/job.js';
import { EventLog } from '../../storage/event-log.js';
import type { PgEventLog } from '../../storage/postgres/event-log.js';
import { PgMisses, PgPresence } from '../../storage/postgres/presence.js';
import { AfterCommit } from '../after-commit.js';
import { randomIds, systemClock, type Clock, type IdSource, type TimerHandle } from '../clock.js';
import type { FailureContext } from '../config.js';
import { Deadlines } from '../deadlines.js';
import { HostClosingError, inBackground } from '../failures.js';
import { DEFAULT_RETENTION_MS, Retention } from '../retention.js';
import type { SubscriberTransport, SubscriptionActor } from '../subscription-actor.js';
import { LocalBackendLog, type BackendLog } from './backend-log.js';
import { ClusterChannel } from './channel.js';
import { JobFollowers, type RenderJob } from './followers.js';
import { rekeyFrame } from './frames.js';
import { Integrations } from './integrations.js';
import { LogJobStore, type JobDecide } from './job-store.js';
import { PAIRING_TTL_MS, Pairings, UNKNOWN_HANDLE_WINDOW_MS } from './pairings.js';
import { LocalMisses, LocalPresence, type Misses, type Presence } from './presence.js';
import { BackendProjection, type BackendState, type ProbedProfile } from './projection.js';
import { LocalPubSub, assistantChannel, type JobNotice, type PubSub } from './pubsub.js';
import { forgetEndedRecords } from './retention.js';
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
  /** Jobs settled and pairings ended longer ago than this are forgotten and their events removed (engine/retention.ts). Default 7 days; `Infinity` keeps everything. */
  readonly retentionMs?: number;
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

type InvalidCode = Extract<JobAnswer, { outcome: 'invalid' }>['code'];

/** What a decision refused before anything was logged, and why. */
interface Invalid {
  readonly invalid: InvalidCode;
  readonly message: string;
}

export class Backend {
  readonly epoch: string;
  private readonly clock: Clock;
  private readonly ids: IdSource;
  private readonly leaseMs: number;
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
  private closed = false;

  private constructor(store: BackendStore, config: BackendConfig) {
    this.clock = config.clock ?? systemClock;
    this.ids = config.ids ?? randomIds;
    this.leaseMs = config.leaseMs ?? DEFAULT_LEASE_MS;
    this.epoch = this.ids.token();
    this.report = config.onError ?? ((error, context) => process.emitWarning(`assistant-relay backend: ${context.what} failed: ${String(error)}`));
    const subscriberFailed = (error: unknown, topic: string) => this.report(error, { what: `a subscriber of ${topic}` });
    let presence: Presence;
    let misses: Misses;
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
      misses = new LocalMisses();
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
      this.pubsub = config.broker === undefined ? new LocalPubSub(subscriberFailed) : new ClusterChannel(config.broker, this.epoch, caughtUp, subscriberFailed);
      presence = new PgPresence(store.connections);
      misses = new PgMisses(store.connections, UNKNOWN_HANDLE_WINDOW_MS);
    }
    this.retention = new Retention({
      clock: this.clock,
      retentionMs: config.retentionMs ?? DEFAULT_RETENTION_MS,
      pass: forgetEndedRecords(this.projection, this.log, this.clock),
      compacted: () => this.log.compacted(),
      report: (error) => this.report(error, { what: 'retention' }),
    });
    this.store = new LogJobStore(this.projection, this.log);
    const keepaliveMs = config.keepaliveMs ?? 20_000;
    const background = (work: Promise<unknown>, what: string) => this.background(work, what);
    this.streams = new JobStreams({
      node: this.epoch,
      clock: this.clock,
      keepaliveMs,
      store: this.store,
      pubsub: this.pubsub,
      leaseMs: this.leaseMs,
      update: (integrationId, jobId, decide) => this.update(integrationId, jobId, decide),
      background,
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
    );
    this.pairings = new Pairings(this.projection, this.log, this.clock, this.ids, config.pairingTtlMs ?? PAIRING_TTL_MS, misses, (work) => this.background(work, 'pairing expiry'));
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

  /** The completion endpoint (4.1): a result (checked against `response_schema` unless the job is BYO) or a failure report. */
  async result(integrationId: string, jobId: string, body: JobResultBody): Promise<JobAnswer> {
    const at = this.clock.now();
    const outcome = await this.update<JobOutcome | Invalid>(integrationId, jobId, (job) =>
      this.ofIntegration(job, (own): Decision<JobEvent, JobOutcome | Invalid> => {
        if ('error' in body) return jobDecider.decide({ type: 'fail', integration_id: integrationId, job_id: jobId, error: body.error, at }, own);
        // A BYO result is an envelope the backend never reads inside; a plain one follows the job's schema. A settled job's answer says so first.
        const invalid = isSettled(own)
          ? undefined
          : own.context.byo
            ? ByoEnvelope.safeParse(body.result).success
              ? undefined
              : 'the result of a BYO job must be a BYO envelope'
            : resultProblems(own.context.response_schema, body.result);
        if (invalid !== undefined) return nothing({ invalid: 'result_invalid', message: invalid });
        return jobDecider.decide({ type: 'complete', integration_id: integrationId, job_id: jobId, result: body.result, at }, own);
      }),
    );
    return this.answer(integrationId, jobId, outcome);
  }

  /** Opens the integration's stream; a second one takes over from the first (`JobStreams`). A rotation not yet answered is sent on it. */
  openStream(integrationId: string, cursor: number | undefined, connect: () => SubscriberTransport): SubscriptionActor {
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
