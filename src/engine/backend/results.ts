/**
 * What the backend checks of a job's result before it is a command: a plain result follows the job's
 * `response_schema` (Ajv, draft 2020-12); a BYO job's result is an envelope it never reads inside. Compiled
 * schemas are kept, within a bound: a client may send its own schema with every job.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { ByoEnvelope } from '../../protocol/index.js';
import type { JobSnapshot } from '../../machines/job.js';

/** Compiled response schemas kept at once; past it the oldest is compiled again when next needed. */
const VALIDATORS_KEPT = 256;

export class ResultChecks {
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly ajv = formats.default(new Ajv2020({ strict: false, allErrors: true }));

  /** Why the result is refused, or `undefined` when it is acceptable. */
  invalid(job: JobSnapshot, result: Record<string, unknown>): string | undefined {
    if (job.context.byo) return ByoEnvelope.safeParse(result).success ? undefined : 'the result of a BYO job must be a BYO envelope';
    const validate = this.validatorOf(job.context.response_schema);
    return validate(result) ? undefined : this.ajv.errorsText(validate.errors, { dataVar: 'result' });
  }

  /** Compiles a schema (throws when it is not one). */
  validatorOf(schema: Record<string, unknown>): ValidateFunction {
    const key = JSON.stringify(schema);
    const kept = this.validators.get(key);
    if (kept !== undefined) return kept;
    const validate = this.ajv.compile(schema);
    if (this.validators.size >= VALIDATORS_KEPT) this.validators.delete(this.validators.keys().next().value!);
    this.validators.set(key, validate);
    return validate;
  }
}
