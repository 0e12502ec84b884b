/**
 * The plugin's jobs: each received once (deduped by `job_id`: the log remembers every id, until
 * retention forgets a closed job past its deadline, retention.ts), judged, run through the reasoner at
 * most `maxConcurrentJobs` at a time, and its outcome posted until the backend takes it or the deadline
 * passes. Appends come first, acts after: a job is started only once its
 * receipt is durable, and posted only once its outcome is. What a stop or a crash leaves at any stage,
 * the next start takes up from the log (`recover`):
 *
 * - seen again on the stream: not run again; a closed job's outcome is posted again from the record;
 * - received or started, not finished: run again (it was cut off) if its deadline allows, else failed
 *   `deadline_exceeded`;
 * - finished, not closed: its outcome is posted (again).
 *
 * A BYO job's plaintext never leaves memory: the log keeps its payload and its result as envelopes, and its
 * failure report (plain on the wire) only its code and the catalogue's words.
 */
import { setMaxListeners } from 'node:events';
import type { BaseLogger } from 'pino';
import type { Appender } from '../../engine/core/append.js';
import type { Clock } from '../../engine/core/clock.js';
import type { Reasoner } from '../reasoners/reasoner.js';
import type { JobResultBody } from '../../protocol/index.js';
import { errorCodeOf, type Backend } from './backend-link.js';
import type { JobClosed, PluginEvent, PluginState } from './events.js';
import { judge, readJobFrame, type IntakeRules } from './intake.js';
import { inClear, jobError } from './job-errors.js';
import { untilAnswered, type Final, type RetryContext } from './retry.js';
import { runReasoner, type Run } from './run.js';

export interface JobsOptions {
  readonly state: PluginState;
  readonly appender: Appender<PluginEvent>;
  readonly backend: Backend;
  readonly reasoner: Reasoner;
  readonly rules: IntakeRules;
  readonly clock: Clock;
  readonly random: () => number;
  readonly logger: BaseLogger;
  readonly maxConcurrentJobs: number;
}

export class Jobs {
  /** Job ids whose run has begun (their `running` POST included) and not ended. */
  readonly running = new Set<string>();
  readonly queue: Array<{ job_id: string; run: Run }> = [];
  private readonly posting = new Set<string>();
  /** Received, not run: the backend refused this plugin (403) when it asked to run them. A redelivery runs them. */
  private readonly parked = new Set<string>();
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
    for (const job of this.options.state.jobs.values()) {
      if (job.stage === 'finished') this.background(this.post(job.job_id));
      else if (job.stage === 'received' || job.stage === 'started') this.consider(job.job_id);
    }
  }

  /** Jobs running now whose `running` POST was accepted: their leases are to be renewed. */
  started(): string[] {
    return [...this.running].filter((id) => this.options.state.jobs.get(id)?.stage === 'started');
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
    const known = this.options.state.jobs.get(frame.job_id);
    if (known === undefined && this.options.state.forgotten.has(frame.job_id)) {
      // Closed and forgotten (retention.ts), its deadline not yet passed: never a second run.
      this.options.logger.info({ job_id: frame.job_id }, 'a job closed and forgotten was sent again: not run');
    } else if (known === undefined) {
      this.background(this.receive(frame.job_id, frame.job, cursor));
    } else if (this.parked.delete(known.job_id)) {
      // Sent again: the backend admits this plugin once more.
      this.consider(known.job_id);
    } else if (known.stage === 'closed' && known.outcome !== undefined && !this.posting.has(known.job_id)) {
      // The backend did not get (or lost) our answer: the same outcome again, never a second run.
      this.background(this.deliver(known.job_id).then(() => undefined));
    }
  }

  private async receive(job_id: string, job: Record<string, unknown>, cursor: string | undefined): Promise<void> {
    await this.options.appender.append([{ type: 'plugin.job_received', job_id, job, ...(cursor !== undefined ? { cursor } : {}), at: this.options.clock.now() }]);
    this.consider(job_id);
  }

  /** A job received and not finished: failed at once if it may not run, else queued to run. */
  private consider(job_id: string): void {
    const verdict = judge(this.options.state.jobs.get(job_id)!.job, this.options.clock.now(), this.options.rules);
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
      this.background(this.execute(job_id, run).finally(() => {
        this.running.delete(job_id);
        this.next();
      }));
    }
  }

  private async execute(job_id: string, run: Run): Promise<void> {
    if (this.options.clock.now() >= run.deadline_at) return this.finish(job_id, jobError('deadline_exceeded'));
    const answer = await untilAnswered(() => this.options.backend.running(job_id), run.deadline_at, this.retryContext);
    if (answer.kind === 'stopped') return;
    if (answer.kind === 'gave_up') return this.finish(job_id, jobError('deadline_exceeded', 'the backend could not be told the job runs before its deadline'));
    if (answer.status === 403) {
      // This plugin is refused (PROTOCOL.md 6e.7), the job is not over: it waits, unrun and open, for a redelivery.
      this.options.logger.warn({ job_id }, 'the backend refuses this plugin: the job waits to be sent again');
      this.parked.add(job_id);
      return;
    }
    if (answer.status !== 200) return this.close(job_id, answer);
    await this.options.appender.append([{ type: 'plugin.job_started', job_id, at: this.options.clock.now() }]);
    const outcome = await runReasoner(this.options.reasoner, run, this.options.clock, this.cutOff.signal);
    if (outcome === 'stopped') return;
    if ('error' in outcome) this.options.logger.warn({ job_id, error: run.sealing === undefined ? outcome.error : inClear(outcome.error).error }, 'job failed');
    return this.finish(job_id, outcome);
  }

  private async finish(job_id: string, outcome: JobResultBody): Promise<void> {
    // Every outcome is recorded here, so every way a BYO job can fail is made safe to send in one place.
    const byo = this.options.state.jobs.get(job_id)!.job.byo === true;
    const recorded = byo && 'error' in outcome ? inClear(outcome.error) : outcome;
    await this.options.appender.append([{ type: 'plugin.job_finished', job_id, outcome: recorded, at: this.options.clock.now() }]);
    return this.post(job_id);
  }

  /** Posts a finished job's outcome; a result the backend finds invalid is reported as a failure instead. */
  private async post(job_id: string): Promise<void> {
    const answer = await this.deliver(job_id);
    const outcome = this.options.state.jobs.get(job_id)!.outcome!;
    if (answer.kind === 'answered' && (answer.status === 422 || answer.status === 413) && 'result' in outcome) {
      // We check every result before posting it, but not against the backend's size bound (413): the client learns now, not at the deadline.
      this.options.logger.error({ job_id, answer: answer.body }, 'the backend refused a result the plugin had checked; reporting the job as failed');
      const message = (answer.body as { error?: { message?: unknown } } | undefined)?.error?.message;
      return this.finish(job_id, jobError('invalid_result', typeof message === 'string' ? message.slice(0, 2_000) : undefined));
    }
    if (answer.kind !== 'stopped') return this.close(job_id, answer);
  }

  /** One outcome's POST with its retries; `posting` keeps a job from being posted twice at once. */
  private async deliver(job_id: string): Promise<Final> {
    const job = this.options.state.jobs.get(job_id)!;
    this.posting.add(job_id);
    try {
      return await untilAnswered(() => this.options.backend.result(job_id, job.outcome!), job.deadline_at, this.retryContext);
    } finally {
      this.posting.delete(job_id);
    }
  }

  /** Nothing more is owed for the job: logged with why. */
  private async close(job_id: string, answer: Exclude<Final, { kind: 'stopped' }>): Promise<void> {
    const { logger, appender, clock } = this.options;
    const status = answer.kind === 'answered' ? answer.status : undefined;
    const code = answer.kind === 'answered' ? errorCodeOf(answer.body) : undefined;
    const reason: JobClosed['reason'] = answer.kind === 'gave_up' ? 'gave_up' : status === 200 ? 'posted' : status === 409 ? 'settled' : 'rejected';
    if (reason === 'gave_up') logger.error({ job_id }, "the job's deadline passed before the backend could be reached: its outcome is not posted");
    else if (reason === 'rejected') logger.error({ job_id, status, code }, "the backend refused the job's POST");
    else if (reason === 'settled') logger.info({ job_id, code }, 'the job ended on the backend otherwise');
    await appender.append([{ type: 'plugin.job_closed', job_id, reason, ...(status !== undefined ? { status } : {}), at: clock.now() }]);
  }

  /** Work nobody awaits: tracked so that `stop()` can wait for it; a failure is logged, never thrown away. */
  private background(work: Promise<void>): void {
    const tracked = work.catch((error: unknown) => this.options.logger.error({ err: error }, 'plugin work failed'));
    this.work.add(tracked);
    void tracked.finally(() => this.work.delete(tracked));
  }
}
