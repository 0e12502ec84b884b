/**
 * What the plugin makes of a job frame, before anything runs: whose job it is (no `job_id`, no job: the
 * frame is dropped), then whether it may run at all. A job that may not is failed with a code, never run
 * and never crashed on: versions it does not handle, an envelope it cannot read, a BYO payload, a deadline
 * already past, a `response_schema` that is not a schema.
 */
import { z } from 'zod';
import { JobId, ReasoningJob, type JobResultBody, type VersionRange } from '../../protocol/index.js';
import { jobError } from './job-errors.js';
import type { ResultCheck, ResultChecks } from './result-check.js';

/** Just enough of a frame to know which job it is. */
const JobHeader = z.looseObject({ job_id: JobId });

/** The envelope with its versions read as any integers: which versions are handled is judged before. */
const AnyVersionJob = ReasoningJob.extend({ schema_version: z.number().int(), envelope_version: z.number().int() });
export type AcceptedJob = z.infer<typeof AnyVersionJob>;

/** The frame's data as a job object with its id, or `undefined` when it is not one. */
export function readJobFrame(data: string): { job_id: string; job: Record<string, unknown> } | undefined {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    return undefined;
  }
  const header = JobHeader.safeParse(json);
  return header.success ? { job_id: header.data.job_id, job: header.data } : undefined;
}

export interface IntakeRules {
  readonly schemaVersions: VersionRange;
  readonly envelopeVersions: VersionRange;
  readonly checks: ResultChecks;
}

export type Verdict =
  | { readonly kind: 'run'; readonly job: AcceptedJob; readonly deadline_at: number; readonly check: ResultCheck }
  | { readonly kind: 'fail'; readonly outcome: JobResultBody };

const within = (version: unknown, range: VersionRange) => Number.isInteger(version) && (version as number) >= range.min && (version as number) <= range.max;

export function judge(job: Record<string, unknown>, now: number, rules: IntakeRules): Verdict {
  if (!within(job.schema_version, rules.schemaVersions) || !within(job.envelope_version, rules.envelopeVersions)) {
    const range = (r: VersionRange) => `${r.min}-${r.max}`;
    return fail(jobError('unsupported_version',
      `schema_version ${String(job.schema_version)}, envelope_version ${String(job.envelope_version)}; this plugin handles schema versions ${range(rules.schemaVersions)}, envelope versions ${range(rules.envelopeVersions)}`));
  }
  const parsed = AnyVersionJob.safeParse(job);
  if (!parsed.success) return fail(jobError('invalid_job', z.prettifyError(parsed.error).slice(0, 2_000)));
  if (parsed.data.byo) return fail(jobError('byo_unsupported'));
  const deadline_at = Date.parse(parsed.data.deadline_at);
  if (deadline_at <= now) return fail(jobError('deadline_exceeded', 'the job arrived after its deadline'));
  let check: ResultCheck;
  try {
    check = rules.checks.compile(parsed.data.response_schema);
  } catch (error) {
    return fail(jobError('invalid_job', `response_schema is not a valid JSON Schema: ${(error as Error).message}`.slice(0, 2_000)));
  }
  return { kind: 'run', job: parsed.data, deadline_at, check };
}

function fail(outcome: JobResultBody): Verdict {
  return { kind: 'fail', outcome };
}
