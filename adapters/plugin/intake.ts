/**
 * What the plugin makes of a job frame, before anything runs: whose job it is (no `job_id`, no job: the
 * frame is dropped), then whether it may run at all. A job that may not is failed with a code, never run
 * and never crashed on: versions it does not handle, an envelope it cannot read, a BYO payload without
 * keys or that does not open, a plain job to a plugin that was paired (it takes only sealed jobs), a
 * deadline already past, a `response_schema` that is not a schema or is beyond what the plugin checks
 * (its bounds, a pattern RE2 does not run).
 *
 * A BYO payload is opened here, each time a job is judged (at receipt, and again after a restart), with
 * associated data built from the job as delivered and the plugin's own integration id: a backend that
 * rewrote any field the plugin acts on (purpose, deadline, response_schema, versions) makes it fail to
 * open. The log keeps the envelope, and the plaintext lives only in memory, for the run.
 */
import { z } from 'zod';
import {
  ByoEnvelope,
  EnvelopeError,
  JobId,
  JsonObject,
  MAX_JSON_DEPTH,
  ReasoningJob,
  open,
  type CodedError,
  type Direction,
  type EnvelopeBinding,
  type Keyring,
  type SessionKeys,
  type VersionRange,
} from '../../protocol/index.js';
import { ResponseSchemaError } from '../../protocol/response-schema.js';
import { jobError } from '../../protocol/job-errors.js';
import type { CompiledResultCheck, ResultCheckCompiler } from './result-check.js';

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
  /** The plugin's own integration: bound into every envelope it opens and seals. */
  readonly integrationId: string;
  readonly schemaVersions: VersionRange;
  readonly envelopeVersions: VersionRange;
  readonly checks: ResultCheckCompiler;
  /** The pairing's keys, read at each use (a rotation replaces them); none: the plugin was not paired. */
  readonly keys?: () => Keyring;
}

export interface Sealing {
  readonly keys: SessionKeys;
  readonly binding: EnvelopeBinding;
}

export type IntakeVerdict =
  | {
      readonly kind: 'run';
      /** For a BYO job: with its payload opened. */
      readonly job: AcceptedJob;
      readonly deadline_at: number;
      readonly check: CompiledResultCheck;
      /**
       * A BYO job's: the keys its payload was sealed under, which seal its result too, and what the result is
       * sealed for (the job as delivered, which its payload's opening vouched for).
       */
      readonly sealing?: Sealing;
    }
  | { readonly kind: 'fail'; readonly outcome: { readonly error: CodedError } };

const within = (version: unknown, range: VersionRange) =>
  Number.isInteger(version) && (version as number) >= range.min && (version as number) <= range.max;

export function judgeIntake(job: Record<string, unknown>, now: number, rules: IntakeRules): IntakeVerdict {
  if (!within(job.schema_version, rules.schemaVersions) || !within(job.envelope_version, rules.envelopeVersions)) {
    const range = (r: VersionRange) => `${r.min}-${r.max}`;
    return fail(
      jobError(
        'unsupported_version',
        `schema_version ${String(job.schema_version)}, envelope_version ${String(job.envelope_version)}; this plugin handles schema versions ${range(rules.schemaVersions)}, envelope versions ${range(rules.envelopeVersions)}`,
      ),
    );
  }
  const parsed = AnyVersionJob.safeParse(job);
  if (!parsed.success) return fail(jobError('invalid_job', z.prettifyError(parsed.error).slice(0, 2_000)));
  let accepted: { job: AcceptedJob; sealing?: Sealing } = { job: parsed.data };
  const keyring = rules.keys?.();
  if (parsed.data.byo) {
    if (keyring === undefined) return fail(jobError('byo_unsupported'));
    const opened = openPayload(parsed.data, keyring, rules.integrationId);
    if ('problem' in opened) return fail(jobError('envelope_invalid', opened.problem));
    accepted = opened;
  } else if (keyring !== undefined) {
    // Paired, this plugin takes only what the client sealed: a plain job can only be the backend's own.
    return fail(jobError('byo_required'));
  }
  const deadline_at = Date.parse(parsed.data.deadline_at);
  if (deadline_at <= now) return fail(jobError('deadline_exceeded', 'the job arrived after its deadline'));
  let check: CompiledResultCheck;
  try {
    check = rules.checks.compile(parsed.data.response_schema);
  } catch (error) {
    if (error instanceof ResponseSchemaError && error.code === 'unsupported_response_schema')
      return fail(jobError(error.code, error.message.slice(0, 2_000)));
    return fail(jobError('invalid_job', `response_schema is not a valid JSON Schema: ${(error as Error).message}`.slice(0, 2_000)));
  }
  return { kind: 'run', ...accepted, deadline_at, check };
}

/** What a job's envelope in `direction` is bound to: the job as delivered, on this plugin's own integration. */
function bindingOf(job: AcceptedJob, direction: Direction, integration_id: string): EnvelopeBinding {
  return {
    direction,
    integration_id,
    job_id: job.job_id,
    purpose: job.purpose,
    deadline_at: job.deadline_at,
    response_schema: job.response_schema,
    schema_version: job.schema_version,
    envelope_version: job.envelope_version,
  };
}

/**
 * The job with its payload opened, and the keys that sealed it; or why it does not open. `open`'s words
 * name the check that failed, never the plaintext.
 */
function openPayload(
  job: AcceptedJob,
  keyring: Keyring,
  integrationId: string,
): { job: AcceptedJob; sealing: Sealing } | { problem: string } {
  let payload: unknown;
  try {
    payload = open((kid) => keyring.keyOf(kid), bindingOf(job, 'client_to_assistant', integrationId), job.payload);
  } catch (error) {
    if (error instanceof EnvelopeError) return { problem: error.message };
    throw error;
  }
  const plain = JsonObject.safeParse(payload);
  if (!plain.success) return { problem: `the envelope opened but does not hold a JSON object nesting at most ${MAX_JSON_DEPTH} levels` };
  // It opened, so it is an envelope, and the keyring holds the keys it names.
  const keys = keyring.keyOf((job.payload as ByoEnvelope).kid)!;
  return { job: { ...job, payload: plain.data }, sealing: { keys, binding: bindingOf(job, 'assistant_to_client', integrationId) } };
}

function fail(outcome: { readonly error: CodedError }): IntakeVerdict {
  return { kind: 'fail', outcome };
}
