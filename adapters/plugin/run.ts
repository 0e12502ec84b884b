/**
 * One reasoner run: the job's deadline is the run's abort signal, and its outcome is always something to
 * post (a result that follows `response_schema`, or a failure with a code), except when the plugin stops
 * first: then the run is cut off, and the job is run again after a restart if its deadline allows.
 * A BYO job's result is checked as plaintext, then sealed here, once: what the log records and every
 * POST sends is that one envelope, so a re-post is the same result to the backend.
 */
import type { Clock } from '../../engine/core/clock.js';
import { ReasonerError, type Reasoner } from '../reasoners/reasoner.js';
import { CodedError, seal, type JobResultBody } from '../../protocol/index.js';
import type { AcceptedJob, Sealing } from './intake.js';
import { jobError } from '../../protocol/job-errors.js';
import type { CompiledResultCheck } from './result-check.js';

export interface Run {
  readonly job: AcceptedJob;
  readonly deadline_at: number;
  readonly check: CompiledResultCheck;
  /** A BYO job's: the keys its payload was sealed under (its result goes back under the same kid, so it opens across a rotation), and the binding. */
  readonly sealing?: Sealing;
}

/** The outcome, or `stopped` when `stop` aborted before the reasoner answered. */
export async function runReasoner(reasoner: Reasoner, run: Run, clock: Clock, stop: AbortSignal): Promise<JobResultBody | 'stopped'> {
  const controller = new AbortController();
  const expired = new Promise<'expired'>((resolve) => {
    const timer = clock.setTimeout(() => resolve('expired'), run.deadline_at - clock.now());
    controller.signal.addEventListener('abort', () => clock.clearTimeout(timer), { once: true });
  });
  const stopped = new Promise<'stopped'>((resolve) => {
    if (stop.aborted) resolve('stopped');
    stop.addEventListener('abort', () => resolve('stopped'), { once: true, signal: controller.signal });
  });
  const answered = Promise.resolve()
    .then(() =>
      reasoner.reason({
        job_id: run.job.job_id,
        purpose: run.job.purpose,
        payload: run.job.payload,
        response_schema: run.job.response_schema,
        deadline_at: run.deadline_at,
        signal: controller.signal,
      }),
    )
    .then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
  // A reasoner that ignores its signal does not hold the job past its deadline: the first to settle wins.
  const first = await Promise.race([answered, expired, stopped]);
  controller.abort(
    first === 'stopped' ? 'the plugin is stopping' : first === 'expired' ? "the job's deadline passed" : 'the reasoner answered',
  );
  if (first === 'stopped') return 'stopped';
  if (first === 'expired') return jobError('deadline_exceeded');
  if ('error' in first) return failureOf(first.error);
  if (typeof first.result !== 'object' || first.result === null || Array.isArray(first.result)) {
    return jobError('invalid_result', 'the reasoner did not answer with a JSON object');
  }
  const verdict = run.check(first.result);
  if (!verdict.ok) return jobError('invalid_result', verdict.message.slice(0, 2_000));
  // Sealed with a synthetic nonce: the same result for the same job is the same envelope, whoever posts it when.
  return { result: run.sealing === undefined ? first.result : seal(run.sealing.keys, run.sealing.binding, first.result) };
}

/** A reasoner's rejection as a failure to post: its own code when it gave a valid one, else `reasoner_error`. */
function failureOf(error: unknown): JobResultBody {
  if (error instanceof ReasonerError) {
    const coded = CodedError.safeParse({ code: error.code, message: error.message.slice(0, 2_000) });
    if (coded.success) return { error: coded.data };
  }
  return jobError('reasoner_error', (error instanceof Error ? error.message : String(error)).slice(0, 2_000) || 'the reasoner failed');
}
