/**
 * The plugin's jobs: each received once (deduped by `job_id`: the log remembers every id, until
 * retention forgets a closed job past its deadline, retention.ts), judged, run through the reasoner at
 * most `maxConcurrentJobs` at a time, and its outcome posted until the backend takes it or the deadline
 * passes. What each thing that happens means for the job is the plugin-job decider's to say
 * (machines/reasoning/plugin-job-decider.ts), as events of the plugin's log; this module only carries
 * out what it decided, as the host's outbox pump does, and keeps in memory only what is in flight.
 * Appends come first, acts after: a job is started only once its receipt is durable, and posted only
 * once its outcome is. What a stop or a crash leaves at any stage, the next start takes up from the log
 * (`recover`):
 *
 * - seen again on the stream: not run again; a closed job's outcome is posted again from the record;
 * - received, started or refused, not finished: run again (it was cut off) if its deadline allows, else
 *   failed `deadline_exceeded`;
 * - finished, not closed: its outcome is posted (again).
 *
 * A BYO job's plaintext never leaves memory: the log keeps its payload and its result as envelopes, and its
 * failure report (plain on the wire) only its code and the catalogue's words.
 */
import { setMaxListeners } from 'node:events';
import type { BaseLogger } from 'pino';
import type { Appender } from '../../engine/core/append.js';
import type { Clock } from '../../engine/core/clock.js';
import { decidePluginJob, type PluginState } from '../../engine/reasoning/plugin-log.js';
import { owed, type BackendAnswer, type PluginJobCommand, type PluginJobOutcome } from '../../machines/reasoning/plugin-job-decider.js';
import type { PluginEvent } from '../../machines/reasoning/plugin-job-events.js';
import { pluginJobStage } from '../../machines/reasoning/plugin-job.js';
import { inClear, jobError } from '../../protocol/job-errors.js';
import type { JobResultBody } from '../../protocol/index.js';
import type { Reasoner } from '../reasoners/reasoner.js';
import { errorCodeOf, type BackendLink } from './backend-link.js';
import { judgeIntake, readJobFrame, type IntakeRules } from './intake.js';
import { untilAnswered, type Final, type RetryContext } from './retry.js';
import { runReasoner, type Run } from './run.js';

export interface JobsOptions {
  readonly state: PluginState;
  readonly appender: Appender<PluginEvent>;
  readonly backend: BackendLink;
  readonly reasoner: Reasoner;
  readonly rules: IntakeRules;
  readonly clock: Clock;
  readonly random: () => number;
  readonly logger: BaseLogger;
  readonly maxConcurrentJobs: number;
}

type Answered = Exclude<Final, { kind: 'stopped' }>;

/** The backend's answer as the decider reads it. */
function answerOf(final: Answered): BackendAnswer {
  if (final.kind === 'gave_up') return final;
  const message = (final.body as { error?: { message?: unknown } } | undefined)?.error?.message;
  return { kind: 'answered', status: final.status, ...(typeof message === 'string' ? { message } : {}) };
}

export class Jobs {
  /** Job ids whose run has begun (their `running` POST included) and not ended: in flight, in memory only. */
  readonly running = new Set<string>();
  /** Judged and waiting for one of the `maxConcurrentJobs` runs. */
  readonly queue: Array<{ job_id: string; run: Run }> = [];
  /** Outcomes being posted: a job sent again meanwhile is not posted twice at once. */
  private readonly posting = new Set<string>();
  private readonly work = new Set<Promise<void>>();
  /** Aborted when a stop's grace ends: runs and waits still going are cut off. */
  private readonly cutOff = new AbortController();
  private readonly retryContext: RetryContext;
  private stopping = false;

  constructor(private readonly options: JobsOptions) {
    // Every running job and every retried post listens for the cut-off: as many listeners as jobs in flight, not a leak.
    setMaxListeners(0, this.cutOff.signal);
    this.retryContext = { clock: options.clock, random: options.random, stop: this.cutOff.signal };
  }

  /** Takes up what the log left open. */
  recover(): void {
    for (const [job_id, job] of this.options.state.jobs) {
      const due = owed(job);
      if (due === 'post') this.background(this.post(job_id));
      else if (due === 'run') this.consider(job_id);
    }
  }

  /** Jobs running now whose `running` POST was accepted: their leases are to be renewed. */
  started(): string[] {
    return [...this.running].filter((id) => {
      const job = this.options.state.jobs.get(id);
      return job !== undefined && pluginJobStage(job) === 'started';
    });
  }

  /**
   * Takes no new job, lets what is under way go on for `graceMs`, then cuts it off (the next start takes
   * it up), and resolves once nothing is left.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.queue.length = 0;
    const grace = graceMs > 0 ? this.options.clock.setTimeout(() => this.cutOff.abort(), graceMs) : this.cutOff.abort();
    while (this.work.size > 0) await Promise.allSettled([...this.work]);
    this.options.clock.clearTimeout(grace);
  }

  /** A frame of the job stream: a new job is received and taken up; a known one is never run again. */
  onFrame(data: string, cursor: string | undefined): void {
    if (this.stopping) return;
    const frame = readJobFrame(data);
    if (frame === undefined) {
      this.options.logger.warn({ cursor }, 'a stream frame that is not a job with a job_id: ignored');
      return;
    }
    const { job_id, job } = frame;
    const command = { type: 'receive', job_id, job, ...(cursor !== undefined ? { cursor } : {}), at: this.options.clock.now() } as const;
    // Decided at once (the append folds before it awaits): the same frame again meets the job received.
    const decision = this.decide(command);
    switch (decision.outcome) {
      case 'received':
        this.background(decision.committed.then(() => this.consider(job_id)));
        return;
      case 'forgotten':
        this.options.logger.info({ job_id }, 'a job closed and forgotten was sent again: not run');
        return;
      case 'resent':
        // The backend admits this plugin once more.
        if (!this.running.has(job_id) && !this.queue.some((queued) => queued.job_id === job_id)) this.consider(job_id);
        return;
      case 'closed_resent':
        if (!this.posting.has(job_id)) this.background(this.deliver(job_id).then(() => undefined));
        return;
      default:
    }
  }

  /** The decider's outcome for the command, its events folded now; `committed` resolves once the log holds them. */
  private decide(command: PluginJobCommand): { outcome: PluginJobOutcome; committed: Promise<void> } {
    const { events, outcome } = decidePluginJob(this.options.state, command);
    return { outcome, committed: events.length > 0 ? this.options.appender.append(events) : Promise.resolve() };
  }

  private async decided(command: PluginJobCommand): Promise<PluginJobOutcome> {
    const { outcome, committed } = this.decide(command);
    await committed;
    return outcome;
  }

  /** A job received and not finished: failed at once if it may not run, else queued to run. */
  private consider(job_id: string): void {
    const verdict = judgeIntake(this.options.state.jobs.get(job_id)!.context.job, this.options.clock.now(), this.options.rules);
    if (verdict.kind === 'fail') {
      // Judging's words never quote a BYO plaintext (an envelope that does not open says only which check failed): the operator reads why here.
      this.options.logger.warn({ job_id, error: verdict.outcome.error }, 'job not run');
      this.background(this.finish(job_id, verdict.outcome));
      return;
    }
    this.queue.push({ job_id, run: verdict });
    this.next();
  }

  private next(): void {
    while (!this.stopping && this.running.size < this.options.maxConcurrentJobs && this.queue.length > 0) {
      const { job_id, run } = this.queue.shift()!;
      this.running.add(job_id);
      this.background(
        this.execute(job_id, run).finally(() => {
          this.running.delete(job_id);
          this.next();
        }),
      );
    }
  }

  private async execute(job_id: string, run: Run): Promise<void> {
    const { clock, backend, logger } = this.options;
    if (clock.now() >= run.deadline_at) return this.finish(job_id, jobError('deadline_exceeded'));
    const answer = await untilAnswered(() => backend.running(job_id), run.deadline_at, this.retryContext);
    if (answer.kind === 'stopped') return;
    switch (await this.decided({ type: 'ran', job_id, answer: answerOf(answer), at: clock.now() })) {
      case 'refused':
        logger.warn({ job_id }, 'the backend refuses this plugin: the job waits to be sent again');
        return;
      case 'finished':
        return this.post(job_id);
      case 'closed':
        return this.closed(job_id, answer);
      case 'started':
        break;
      default:
        return;
    }
    const outcome = await runReasoner(this.options.reasoner, run, clock, this.cutOff.signal);
    if (outcome === 'stopped') return;
    if ('error' in outcome)
      logger.warn({ job_id, error: run.sealing === undefined ? outcome.error : inClear(outcome.error).error }, 'job failed');
    return this.finish(job_id, outcome);
  }

  private async finish(job_id: string, outcome: JobResultBody): Promise<void> {
    if ((await this.decided({ type: 'finish', job_id, outcome, at: this.options.clock.now() })) === 'finished') return this.post(job_id);
  }

  /** Posts a finished job's outcome until the backend answers; what the answer means is the decider's. */
  private async post(job_id: string): Promise<void> {
    const answer = await this.deliver(job_id);
    if (answer.kind === 'stopped') return;
    const outcome = await this.decided({ type: 'posted', job_id, answer: answerOf(answer), at: this.options.clock.now() });
    if (outcome === 'finished') {
      // We check every result before posting it, but not against the backend's size bound (413).
      this.options.logger.error(
        { job_id, answer: answer.kind === 'answered' ? answer.body : undefined },
        'the backend refused a result the plugin had checked; reporting the job as failed',
      );
      return this.post(job_id);
    }
    if (outcome === 'closed') this.closed(job_id, answer);
  }

  /** One outcome's POST with its retries; `posting` keeps a job from being posted twice at once. */
  private async deliver(job_id: string): Promise<Final> {
    const { context } = this.options.state.jobs.get(job_id)!;
    this.posting.add(job_id);
    try {
      return await untilAnswered(() => this.options.backend.result(job_id, context.outcome!), context.deadline_at, this.retryContext);
    } finally {
      this.posting.delete(job_id);
    }
  }

  /** Nothing more is owed for the job: the operator reads why. */
  private closed(job_id: string, answer: Answered): void {
    const { logger, state } = this.options;
    const status = answer.kind === 'answered' ? answer.status : undefined;
    const code = answer.kind === 'answered' ? errorCodeOf(answer.body) : undefined;
    const reason = state.jobs.get(job_id)?.context.reason;
    if (reason === 'gave_up')
      logger.error({ job_id }, "the job's deadline passed before the backend could be reached: its outcome is not posted");
    else if (reason === 'rejected') logger.error({ job_id, status, code }, "the backend refused the job's POST");
    else if (reason === 'settled') logger.info({ job_id, code }, 'the job ended on the backend otherwise');
  }

  /** Work nobody awaits: tracked so that `stop()` can wait for it; a failure is logged, never thrown away. */
  private background(work: Promise<void>): void {
    const tracked = work.catch((error: unknown) => this.options.logger.error({ err: error }, 'plugin work failed'));
    this.work.add(tracked);
    void tracked.finally(() => this.work.delete(tracked));
  }
}
