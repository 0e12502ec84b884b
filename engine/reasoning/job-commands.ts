/**
 * A job's commands, the client's (create, cancel) and the plugin's (run, result), and the ones the engine
 * gives itself (expire, release, renew): each checked for what the log need not see, then decided with
 * the pure job decider against the `JobStore`, and answered with the job as committed.
 */
import {
  ByoEnvelope,
  DEADLINE_SKEW_MS,
  MAX_DEADLINE_MS,
  jsonBytes,
  purposeResultSchema,
  type CodedError,
  type JobCreateBody,
  type JobResultBody,
} from '../../protocol/index.js';
import { nothing, type Decision } from '../../machines/core/decider.js';
import { isRevoked } from '../../machines/reasoning/integration.js';
import { jobDecider, type JobCommand, type JobOutcome } from '../../machines/reasoning/job-decider.js';
import type { JobEvent } from '../../machines/reasoning/job-events.js';
import { isSettled, type JobSnapshot } from '../../machines/reasoning/job.js';
import { overJobRate, overOpenJobs, type OverQuota, type Quotas } from '../../machines/reasoning/quotas.js';
import type { Clock } from '../core/clock.js';
import { HostClosingError } from '../core/failures.js';
import { createRefusal, overBoundMessage, type Invalid, type JobAnswer } from './job-answers.js';
import type { DecideOptions } from './backend-log.js';
import type { JobDecide, JobStore } from './job-store.js';
import type { BackendProjection } from './projection.js';
import type { ResultChecker } from './result-check.js';

export interface JobCommandParts {
  readonly projection: BackendProjection;
  readonly store: JobStore;
  readonly clock: Clock;
  /** How long a run's lease lasts between heartbeats. */
  readonly leaseMs: number;
  readonly quotas: Pick<Quotas, 'maxOpenJobs' | 'maxJobsPerMinute'>;
  readonly maxJobBytes: number;
  readonly resultChecker: ResultChecker;
  /** Whether the engine closes: nothing new enters its log then (the edge answers 503 `shutting_down`). */
  readonly closed: () => boolean;
}

/** A decision on a plain result whose check was for another schema than the job has (or none): checked again against this job. */
interface Unchecked {
  readonly unchecked: JobSnapshot;
}

export class JobCommands {
  constructor(private readonly parts: JobCommandParts) {}

  /**
   * Creates a job (idempotent by `job_id`); its deadline is the client's `deadline_at` (a BYO job's must
   * be given), else `deadline_ms` from now. A `response_schema` the client sends must compile as a JSON
   * Schema, or the job is refused (`invalid`) before it is logged. A new job while the integration has the
   * most open jobs it may is refused (`over_quota`); the same create again is answered the job first.
   */
  async create(integrationId: string, body: JobCreateBody): Promise<JobAnswer> {
    const integration = this.parts.projection.integration(integrationId);
    if (integration === undefined || isRevoked(integration)) return { outcome: 'unknown', job: undefined };
    const refusal = createRefusal(body, integration, this.parts.maxJobBytes);
    if (refusal !== undefined) return { outcome: 'invalid', code: refusal.invalid, job: undefined, message: refusal.message };
    const at = this.parts.clock.now();
    const deadline_at = body.deadline_at === undefined ? at + body.deadline_ms : Date.parse(body.deadline_at);
    const create: JobCommand = {
      type: 'create',
      job_id: body.job_id,
      integration_id: integrationId,
      purpose: body.purpose,
      payload: body.payload,
      byo: body.byo,
      response_schema: body.response_schema ?? purposeResultSchema(body.purpose),
      provider_kind: integration.context.provider_kind,
      deadline_at,
      at,
    };
    // A client's deadline is judged for a new job only: a retry of one that exists is answered as it stands, whatever the time.
    const fits = deadline_at > at && deadline_at <= at + MAX_DEADLINE_MS + DEADLINE_SKEW_MS;
    const outcome = await this.update<JobOutcome | Invalid | OverQuota>(integrationId, body.job_id, (job) => {
      if (job !== undefined) return jobDecider.decide(create, job);
      if (!fits)
        return nothing({
          invalid: 'invalid_deadline',
          message: `deadline_at ${body.deadline_at} is not after the backend's clock (${new Date(at).toISOString()}) and within 1 h and 60 s of it`,
        });
      const over =
        overOpenJobs(this.parts.projection.openJobs(integrationId), this.parts.quotas.maxOpenJobs, at) ??
        overJobRate(this.parts.projection.jobsCreated(integrationId), this.parts.quotas.maxJobsPerMinute, at);
      return over === undefined ? jobDecider.decide(create, job) : nothing(over);
    });
    if (typeof outcome === 'object' && 'over' in outcome) return { outcome: 'over_quota', quota: outcome, job: undefined };
    return this.answer(integrationId, body.job_id, outcome);
  }

  /** The integration's job as committed: what a client reads, so that a crash can never take back what it saw. Another integration's job of that id is not it. */
  async committed(integrationId: string, jobId: string): Promise<JobSnapshot | undefined> {
    return (await this.parts.store.job(integrationId, jobId))?.job;
  }

  /** Why the integration's plugin is refused, if its latest heartbeat was: it takes no jobs then. */
  refusalOf(integrationId: string): CodedError | undefined {
    return this.parts.projection.integration(integrationId)?.context.seen?.refused;
  }

  /** The client cancels one of its integration's jobs. */
  async cancel(integrationId: string, jobId: string): Promise<JobAnswer> {
    const at = this.parts.clock.now();
    const outcome = await this.command({ type: 'cancel', integration_id: integrationId, job_id: jobId, at });
    return this.answer(integrationId, jobId, outcome);
  }

  // ---- jobs: the plugin's side ----------------------------------------------------------------------

  /** The plugin runs the job: its lease runs a full lease from now. */
  async running(integrationId: string, jobId: string): Promise<JobAnswer> {
    const refusal = this.refusalOf(integrationId);
    const at = this.parts.clock.now();
    const outcome = await this.update<JobOutcome | Invalid>(integrationId, jobId, (job) =>
      this.ofIntegration(job, (own): Decision<JobEvent, JobOutcome | Invalid> =>
        refusal === undefined
          ? jobDecider.decide({ type: 'run', integration_id: integrationId, job_id: jobId, lease_until: at + this.parts.leaseMs, at }, own)
          : nothing({ invalid: 'plugin_refused', message: refusal.message }),
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
    if (bytes > this.parts.maxJobBytes)
      return {
        outcome: 'invalid',
        code: 'result_too_large',
        job: undefined,
        message: overBoundMessage('result', bytes, this.parts.maxJobBytes),
      };
    let checked: { readonly schema: Record<string, unknown>; readonly problem: string | undefined } | undefined;
    let job = this.parts.projection.job(integrationId, jobId);
    // A job is created once per id until retention forgets it: a third round would need it forgotten and created twice meanwhile.
    for (let round = 0; round < 3; round += 1) {
      if ('result' in body && job !== undefined && !isSettled(job) && !job.context.byo) {
        const schema = job.context.response_schema;
        const verdict = await this.parts.resultChecker.check({ integrationId, schema, result: body.result, bytes });
        if (verdict.outcome === 'busy')
          return {
            outcome: 'busy',
            code: 'too_many_result_checks',
            retry_after_s: verdict.retry_after_s,
            message: verdict.message,
            job: undefined,
          };
        if (verdict.outcome === 'too_costly')
          return {
            outcome: 'invalid',
            code: 'result_check_too_costly',
            job: await this.committed(integrationId, jobId),
            message: verdict.message,
          };
        checked = { schema, problem: verdict.problem };
      }
      const at = this.parts.clock.now();
      const outcome = await this.update<JobOutcome | Invalid | Unchecked>(integrationId, jobId, (current) =>
        this.ofIntegration(current, (own): Decision<JobEvent, JobOutcome | Invalid | Unchecked> => {
          if ('error' in body)
            return jobDecider.decide({ type: 'fail', integration_id: integrationId, job_id: jobId, error: body.error, at }, own);
          const complete = () =>
            jobDecider.decide({ type: 'complete', integration_id: integrationId, job_id: jobId, result: body.result, at }, own);
          // A BYO result is an envelope the backend never reads inside; a plain one follows the job's schema. A settled job's answer says so first.
          if (isSettled(own)) return complete();
          if (own.context.byo)
            return ByoEnvelope.safeParse(body.result).success
              ? complete()
              : nothing({ invalid: 'result_invalid', message: 'the result of a BYO job must be a BYO envelope' });
          if (checked?.schema !== own.context.response_schema) return nothing({ unchecked: own });
          return checked.problem === undefined ? complete() : nothing({ invalid: 'result_invalid', message: checked.problem });
        }),
      );
      if (typeof outcome !== 'object' || !('unchecked' in outcome)) return this.answer(integrationId, jobId, outcome);
      job = outcome.unchecked;
    }
    throw new Error(`the job ${jobId} changed under its result's check three times`);
  }

  /** Decides on one job against the store; refused once the engine closes. */
  update<Outcome>(integrationId: string, jobId: string, decide: JobDecide<Outcome>, options?: DecideOptions): Promise<Outcome> {
    // Nothing new enters the log of a closing backend; the edge answers 503 `shutting_down`.
    if (this.parts.closed()) return Promise.reject(new HostClosingError());
    return this.parts.store.update(integrationId, jobId, decide, options);
  }

  /** A command the engine gives itself (a deadline, a lease: `owner`; a heartbeat's renewal), decided as it is. */
  command(command: JobCommand, options?: DecideOptions): Promise<JobOutcome> {
    return this.update(command.integration_id, command.job_id, (job) => jobDecider.decide(command, job), options);
  }

  /** A decision on a job that exists (the store found it by integration and id); any other is unknown before anything else is checked. */
  private ofIntegration<Outcome>(
    job: JobSnapshot | undefined,
    decide: (job: JobSnapshot) => Decision<JobEvent, Outcome>,
  ): Decision<JobEvent, Outcome | 'unknown'> {
    return job === undefined ? nothing('unknown') : decide(job);
  }

  /** The answer to a command: its outcome and the job as committed now. */
  private async answer(integrationId: string, jobId: string, outcome: JobOutcome | Invalid): Promise<JobAnswer> {
    const job = await this.committed(integrationId, jobId);
    if (typeof outcome === 'object') return { outcome: 'invalid', code: outcome.invalid, job, message: outcome.message };
    return { outcome, job: outcome === 'unknown' ? undefined : job };
  }
}
