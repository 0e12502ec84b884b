/**
 * What the client holds against the backend's word about a job (PROTOCOL.md 8.9): the backend relays, it
 * is not trusted. A view must be of the job asked for, and must not change what the client created (its
 * job_id, integration, purpose, byo, deadline, creation time); a client holding a pairing's keys takes
 * only sealed jobs; a BYO result must open under the pairing's keys, bound to the job as the client
 * created it, and follow its response_schema. Anything else is a coded `JobCheckError`, never a result.
 * Browser-safe.
 */
import { ByoEnvelope, EnvelopeError, open, type EnvelopeBinding, type Keyring } from '../../protocol/byo/index.js';
import { CLIENT_ERRORS, type ClientErrorCode } from '../../protocol/errors.js';
import { ENVELOPE_VERSION, SCHEMA_VERSION, type JobPurpose, type JobView } from '../../protocol/reasoning.js';
import { purposeResultSchema } from '../../protocol/purpose-schemas.js';
import { resultProblems } from '../../protocol/response-schema.js';

/** The backend's view of a job refused: the message starts with the code (`view_mismatch: …`). */
export class JobCheckError extends Error {
  override readonly name = 'JobCheckError';
  constructor(
    readonly code: ClientErrorCode,
    detail: string = CLIENT_ERRORS[code],
  ) {
    super(`${code}: ${detail}`);
  }
}

/** A job as this client knows it: the job asked for, and what it was created with when this client knows. */
export interface KnownJob {
  readonly job_id: string;
  readonly integration_id: string;
  readonly purpose?: JobPurpose;
  readonly byo?: boolean;
  /** ISO 8601 with milliseconds, as sent or as first seen. */
  readonly deadline_at?: string;
  readonly created_at?: string;
}

const FIXED = ['job_id', 'integration_id', 'purpose', 'byo', 'deadline_at', 'created_at'] as const;

/** What a view of `known` may never change afterwards. */
export function knownFrom(view: JobView): KnownJob {
  return {
    job_id: view.job_id,
    integration_id: view.integration_id,
    purpose: view.purpose,
    byo: view.byo,
    deadline_at: view.deadline_at,
    created_at: view.created_at,
  };
}

/** The response_schema a job of `purpose` is created with by this client (sent explicitly, so that its digest is what the client sent). */
export function responseSchemaOf(purpose: JobPurpose): Readonly<Record<string, unknown>> {
  return purposeResultSchema(purpose);
}

/** What a BYO job's envelope in `direction` is bound to, as the client created it. */
export function bindingOf(
  job: Required<Pick<KnownJob, 'job_id' | 'integration_id' | 'purpose' | 'deadline_at'>>,
  direction: EnvelopeBinding['direction'],
): EnvelopeBinding {
  return {
    direction,
    integration_id: job.integration_id,
    job_id: job.job_id,
    purpose: job.purpose,
    deadline_at: job.deadline_at,
    response_schema: responseSchemaOf(job.purpose),
    schema_version: SCHEMA_VERSION,
    envelope_version: ENVELOPE_VERSION,
  };
}

/** `view` checked against `known`, with a BYO result opened and checked; else a `JobCheckError`. */
export function checkedView(view: JobView, known: KnownJob, keys: Keyring | undefined): JobView {
  for (const field of FIXED) {
    if (known[field] === undefined || view[field] === known[field]) continue;
    if (field === 'byo' && !view.byo)
      throw new JobCheckError('byo_downgrade', 'the backend shows a job created sealed as plain (byo false)');
    throw new JobCheckError(
      'view_mismatch',
      `the backend's view has ${field} ${JSON.stringify(view[field])}, not ${JSON.stringify(known[field])}`,
    );
  }
  // A client paired with the assistant has only sealed jobs (PROTOCOL.md 7.13): a plain one is the backend's.
  if (keys !== undefined && !view.byo)
    throw new JobCheckError('byo_downgrade', "the backend shows a plain job to a client that holds a pairing's keys");
  if (!view.byo || view.result === undefined) return view;
  if (keys === undefined) throw new JobCheckError('keys_required');
  if (!ByoEnvelope.safeParse(view.result).success)
    throw new JobCheckError('byo_downgrade', 'the result of a sealed job is not a BYO envelope');
  // Unknown fields are the view's, checked above where known; a lie there makes the envelope fail to open.
  const binding = bindingOf(
    { job_id: known.job_id, integration_id: known.integration_id, purpose: view.purpose, deadline_at: view.deadline_at },
    'assistant_to_client',
  );
  let result: unknown;
  try {
    result = open(keys.keyOf, binding, view.result);
  } catch (error) {
    if (error instanceof EnvelopeError) throw new JobCheckError('result_forged', error.message);
    throw error;
  }
  const problems = resultProblems(binding.response_schema, result);
  if (problems !== undefined)
    throw new JobCheckError('result_nonconforming', `the job's result does not follow its response_schema: ${problems}`);
  return { ...view, result: result as Record<string, unknown> };
}
