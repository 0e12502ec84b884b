/**
 * The assistant plugin (issue 9, item 3): it subscribes to its integration's job stream, heartbeats, and
 * runs each job once through its reasoner, posting the outcome with retries. Its own event log records
 * every job it has seen, started, finished and closed, so that after any stop, SIGKILL included, each job
 * stands somewhere exact:
 *
 * - seen again on the stream: not run again; a closed job's outcome is posted again from the record;
 * - received or started, not finished: run again (it was cut off) if its deadline allows, else failed
 *   `deadline_exceeded`;
 * - finished, not closed: its outcome is posted (again).
 *
 * Appends come first, acts after: a job is started only once its receipt is durable, and posted only once
 * its outcome is.
 */
import { createRequire } from 'node:module';
import { pino, type BaseLogger } from 'pino';
import type { Dispatcher } from 'undici';
import { Appender } from '../../engine/append.js';
import { systemClock, type Clock } from '../../engine/clock.js';
import type { Reasoner } from '../../engine/reasoner.js';
import { ENVELOPE_VERSION, SCHEMA_VERSION, type CodedError, type Heartbeat, type HeartbeatAnswer, type JobResultBody, type VersionRange } from '../../protocol/index.js';
import { EventLog } from '../../storage/event-log.js';
import { Backend, errorCodeOf } from './backend.js';
import { evolvePlugin, initialPluginState, type JobClosed, type JobStage, type PluginEvent, type PluginState } from './events.js';
import { Heartbeats } from './heartbeats.js';
import { judge, readJobFrame, type IntakeRules } from './intake.js';
import { jobError } from './job-errors.js';
import { ResultChecks } from './result-check.js';
import { untilAnswered, type Final, type RetryContext } from './retry.js';
import { runReasoner, type Run } from './run.js';
import { Subscription, type StreamState } from './subscription.js';

const { version } = createRequire(import.meta.url)('../../../package.json') as { version: string };

export interface PluginOptions {
  /** The backend relay's base URL; every request of the plugin goes there and nowhere else. */
  readonly backendUrl: string;
  readonly integrationId: string;
  /** The integration's RELAY_TOKEN (never logged). */
  readonly relayToken: string;
  readonly reasoner: Reasoner;
  /** The plugin's own event log (a SQLite file, private as the host's). */
  readonly db: string;
  /** The provider this plugin speaks for, as the registry names it. */
  readonly providerKind: string;
  /** The versions of jobs it handles; heartbeats advertise them. Default: 1 to 1. */
  readonly schemaVersions?: VersionRange;
  readonly envelopeVersions?: VersionRange;
  /** Jobs run at once; more wait their turn. Default 4. */
  readonly maxConcurrentJobs?: number;
  /** How long `stop()` lets running jobs and pending POSTs finish before it cuts them off. Default 10 s. */
  readonly stopGraceMs?: number;
  readonly clock?: Clock;
  /** The jitter of every backoff (default `Math.random`). */
  readonly random?: () => number;
  /** undici's dispatcher for every request to the backend. */
  readonly dispatcher?: Dispatcher;
  /** pino-compatible; silent by default. */
  readonly logger?: BaseLogger;
  /** The log could not commit: memory and log have diverged. Default: logged, and the plugin stops. */
  readonly onFatal?: (error: unknown) => void;
}

/** What tests and operators can see of a running plugin. */
export interface PluginStatus {
  readonly stream: StreamState;
  readonly streamsOpened: number;
  readonly nextStreamTryInMs: number | undefined;
  /** Heartbeats done with (answered or failed). */
  readonly heartbeats: number;
  readonly refused: CodedError | undefined;
  readonly running: readonly string[];
  readonly queued: readonly string[];
  readonly jobs: Readonly<Record<string, JobStage>>;
}

const DEFAULT_VERSIONS = (version: number): VersionRange => ({ min: version, max: version });

export class Plugin {
  private readonly clock: Clock;
  private readonly logger: BaseLogger;
  private readonly backend: Backend;
  private readonly log: EventLog<PluginEvent>;
  private readonly appender: Appender<PluginEvent>;
  private readonly state: PluginState = initialPluginState();
  private readonly rules: IntakeRules;
  private readonly subscription: Subscription;
  private readonly heartbeats: Heartbeats;
  private readonly retry: RetryContext;
  private readonly maxConcurrentJobs: number;
  /** Aborted at the end of `stop()`'s grace: runs and waits still going are cut off. */
  private readonly cutOff = new AbortController();
  private readonly queue: Array<{ job_id: string; run: Run }> = [];
  private readonly running = new Set<string>();
  private readonly posting = new Set<string>();
  private readonly work = new Set<Promise<void>>();
  private refused: CodedError | undefined;
  private stopping = false;

  constructor(private readonly options: PluginOptions) {
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? pino({ enabled: false });
    this.maxConcurrentJobs = options.maxConcurrentJobs ?? 4;
    this.rules = {
      schemaVersions: options.schemaVersions ?? DEFAULT_VERSIONS(SCHEMA_VERSION),
      envelopeVersions: options.envelopeVersions ?? DEFAULT_VERSIONS(ENVELOPE_VERSION),
      checks: new ResultChecks(),
    };
    this.retry = { clock: this.clock, random: options.random ?? Math.random, stop: this.cutOff.signal };
    this.backend = new Backend({
      url: options.backendUrl,
      integrationId: options.integrationId,
      relayToken: options.relayToken,
      clock: this.clock,
      ...(options.dispatcher !== undefined ? { dispatcher: options.dispatcher } : {}),
    });
    this.log = EventLog.open<PluginEvent>({ path: options.db, streamOf: (event) => event.job_id });
    const onFatal = options.onFatal ?? ((error: unknown) => {
      this.logger.fatal({ err: error }, "the plugin's event log failed; stopping");
      void this.stop();
    });
    this.appender = new Appender(this.log, (event) => evolvePlugin(this.state, event), onFatal);
    for (const { event } of this.log.read()) evolvePlugin(this.state, event);
    this.subscription = new Subscription({
      backend: this.backend,
      clock: this.clock,
      random: this.retry.random,
      logger: this.logger,
      cursor: () => this.state.cursor,
      onJob: (data, id) => this.onFrame(data, id),
    });
    this.heartbeats = new Heartbeats({
      backend: this.backend,
      clock: this.clock,
      logger: this.logger,
      body: () => this.heartbeat(),
      onAnswer: (answer) => this.onHeartbeatAnswer(answer),
    });
  }

  /** Takes up what the log left open, sends the first heartbeat, then subscribes (unless that heartbeat was refused). */
  async start(): Promise<void> {
    for (const job of this.state.jobs.values()) {
      if (job.stage === 'finished') this.background(this.post(job.job_id));
      else if (job.stage === 'received' || job.stage === 'started') this.consider(job.job_id);
    }
    await this.heartbeats.start();
    if (this.refused === undefined && !this.stopping) this.subscription.resume();
  }

  /**
   * Stops taking jobs, lets running jobs and pending POSTs go on for `stopGraceMs`, then cuts them off
   * (each is taken up again by the next start), and closes the log.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.queue.length = 0;
    await Promise.all([this.subscription.stop(), this.heartbeats.stop()]);
    const graceMs = this.options.stopGraceMs ?? 10_000;
    const grace = graceMs > 0 ? this.clock.setTimeout(() => this.cutOff.abort(), graceMs) : this.cutOff.abort();
    while (this.work.size > 0) await Promise.allSettled([...this.work]);
    this.clock.clearTimeout(grace);
    await this.log.close();
    await this.backend.close();
  }

  status(): PluginStatus {
    return {
      stream: this.subscription.state,
      streamsOpened: this.subscription.opened,
      nextStreamTryInMs: this.subscription.nextTryInMs,
      heartbeats: this.heartbeats.done,
      refused: this.refused,
      running: [...this.running],
      queued: this.queue.map((q) => q.job_id),
      jobs: Object.fromEntries([...this.state.jobs.values()].map((job) => [job.job_id, job.stage])),
    };
  }

  private heartbeat(): Heartbeat {
    const running = [...this.running].filter((id) => this.state.jobs.get(id)?.stage === 'started');
    return {
      plugin: { name: 'assistant-relay', version },
      provider_kind: this.options.providerKind,
      schema_versions: this.rules.schemaVersions,
      envelope_versions: this.rules.envelopeVersions,
      status: this.refused !== undefined ? 'degraded' : this.running.size >= this.maxConcurrentJobs ? 'busy' : 'ready',
      running_job_ids: running,
      reasoner: { name: this.options.reasoner.name, ...(this.options.reasoner.model !== undefined ? { model: this.options.reasoner.model } : {}) },
    };
  }

  private onHeartbeatAnswer(answer: HeartbeatAnswer): void {
    if (answer.refused !== undefined) {
      if (this.refused === undefined) this.logger.error({ refused: answer.refused }, 'the backend refused this plugin: it takes no jobs until a heartbeat is accepted');
      this.refused = answer.refused;
      this.subscription.pause();
      return;
    }
    if (this.refused !== undefined) this.logger.info('the backend accepts this plugin again');
    this.refused = undefined;
    if (!this.stopping) this.subscription.resume();
  }

  private onFrame(data: string, cursor: string | undefined): void {
    if (this.stopping) return;
    const frame = readJobFrame(data);
    if (frame === undefined) {
      this.logger.warn({ cursor }, 'a stream frame that is not a job with a job_id: ignored');
      return;
    }
    const known = this.state.jobs.get(frame.job_id);
    if (known === undefined) {
      this.background(this.receive(frame.job_id, frame.job, cursor));
    } else if (known.stage === 'closed' && known.outcome !== undefined && !this.posting.has(known.job_id)) {
      // The backend did not get (or lost) our answer: the same outcome again, never a second run.
      this.background(this.deliver(known.job_id).then(() => undefined));
    }
  }

  private async receive(job_id: string, job: Record<string, unknown>, cursor: string | undefined): Promise<void> {
    await this.appender.append([{ type: 'plugin.job_received', job_id, job, ...(cursor !== undefined ? { cursor } : {}), at: this.clock.now() }]);
    this.consider(job_id);
  }

  /** A job received and not finished: failed at once if it may not run, else queued to run. */
  private consider(job_id: string): void {
    const verdict = judge(this.state.jobs.get(job_id)!.job, this.clock.now(), this.rules);
    if (verdict.kind === 'fail') {
      this.background(this.finish(job_id, verdict.outcome));
      return;
    }
    this.queue.push({ job_id, run: verdict });
    this.next();
  }

  private next(): void {
    while (!this.stopping && this.running.size < this.maxConcurrentJobs && this.queue.length > 0) {
      const { job_id, run } = this.queue.shift()!;
      this.running.add(job_id);
      this.background(this.execute(job_id, run).finally(() => {
        this.running.delete(job_id);
        this.next();
      }));
    }
  }

  private async execute(job_id: string, run: Run): Promise<void> {
    if (this.clock.now() >= run.deadline_at) return this.finish(job_id, jobError('deadline_exceeded'));
    const answer = await untilAnswered(() => this.backend.running(job_id), run.deadline_at, this.retry);
    if (answer.kind === 'stopped') return;
    if (answer.kind === 'gave_up') return this.finish(job_id, jobError('deadline_exceeded', 'the backend could not be told the job runs before its deadline'));
    if (answer.status !== 200) return this.close(job_id, answer);
    await this.appender.append([{ type: 'plugin.job_started', job_id, at: this.clock.now() }]);
    const outcome = await runReasoner(this.options.reasoner, run, this.clock, this.cutOff.signal);
    if (outcome === 'stopped') return;
    if ('error' in outcome) this.logger.warn({ job_id, error: outcome.error }, 'job failed');
    return this.finish(job_id, outcome);
  }

  private async finish(job_id: string, outcome: JobResultBody): Promise<void> {
    await this.appender.append([{ type: 'plugin.job_finished', job_id, outcome, at: this.clock.now() }]);
    return this.post(job_id);
  }

  /** Posts a finished job's outcome; a result the backend finds invalid is reported as a failure instead. */
  private async post(job_id: string): Promise<void> {
    const answer = await this.deliver(job_id);
    const outcome = this.state.jobs.get(job_id)!.outcome!;
    if (answer.kind === 'answered' && answer.status === 422 && 'result' in outcome) {
      // We check every result before posting it, so this is a bug of ours (or the backend's): the client learns now, not at the deadline.
      this.logger.error({ job_id, answer: answer.body }, 'the backend refused a result the plugin had checked; reporting the job as failed');
      const message = (answer.body as { error?: { message?: unknown } } | undefined)?.error?.message;
      return this.finish(job_id, jobError('invalid_result', typeof message === 'string' ? message.slice(0, 2_000) : undefined));
    }
    if (answer.kind !== 'stopped') return this.close(job_id, answer);
  }

  /** One outcome's POST with its retries; `posting` keeps a job from being posted twice at once. */
  private async deliver(job_id: string): Promise<Final> {
    const job = this.state.jobs.get(job_id)!;
    this.posting.add(job_id);
    try {
      return await untilAnswered(() => this.backend.result(job_id, job.outcome!), job.deadline_at, this.retry);
    } finally {
      this.posting.delete(job_id);
    }
  }

  /** Nothing more is owed for the job: logged with why. */
  private async close(job_id: string, answer: Exclude<Final, { kind: 'stopped' }>): Promise<void> {
    let reason: JobClosed['reason'];
    if (answer.kind === 'gave_up') reason = 'gave_up';
    else if (answer.status === 200) reason = 'posted';
    else if (answer.status === 409) reason = 'settled';
    else reason = 'rejected';
    if (reason === 'gave_up') this.logger.error({ job_id }, "the job's deadline passed before the backend could be reached: its outcome is not posted");
    if (reason === 'rejected') this.logger.error({ job_id, status: answer.kind === 'answered' ? answer.status : undefined, code: answer.kind === 'answered' ? errorCodeOf(answer.body) : undefined }, 'the backend refused the job\'s POST');
    if (reason === 'settled') this.logger.info({ job_id, code: answer.kind === 'answered' ? errorCodeOf(answer.body) : undefined }, 'the job ended on the backend otherwise');
    const status = answer.kind === 'answered' ? { status: answer.status } : {};
    await this.appender.append([{ type: 'plugin.job_closed', job_id, reason, ...status, at: this.clock.now() }]);
  }

  /** Work nobody awaits: tracked so that `stop()` can wait for it; a failure is logged, never thrown away. */
  private background(work: Promise<void>): void {
    const tracked = work.catch((error: unknown) => this.logger.error({ err: error }, 'plugin work failed'));
    this.work.add(tracked);
    void tracked.finally(() => this.work.delete(tracked));
  }
}

/** Opens the plugin's log, takes up what it left open, and starts. */
export async function startPlugin(options: PluginOptions): Promise<Plugin> {
  const plugin = new Plugin(options);
  await plugin.start();
  return plugin;
}
