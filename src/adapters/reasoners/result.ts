/**
 * Checks a reasoner's answer against the job's `response_schema` (draft 2020-12) with Ajv. Every reasoner
 * returns only what passes, so the plugin's own check (the same rule) never finds a reasoner at fault.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { ReasonerError } from '../../engine/reasoner.js';

// `addUsedSchema: false`: a client's schema may carry an `$id`, and two jobs may bring two schemas with one id.
const ajv = new Ajv2020({ strict: false, allErrors: true, addUsedSchema: false });
addFormats.default(ajv);

/** Compiled schemas by their text, newest use last; the purposes' few schemas stay, a flood of clients' ones cannot grow memory. */
const compiled = new Map<string, { readonly schema: object; readonly validate: ValidateFunction }>();
const MAX_COMPILED = 64;

function validatorOf(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  const hit = compiled.get(key);
  if (hit !== undefined) {
    compiled.delete(key);
    compiled.set(key, hit);
    return hit.validate;
  }
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    throw new ReasonerError('invalid_response_schema', `the job's response_schema does not compile: ${(error as Error).message}`, { cause: error });
  }
  compiled.set(key, { schema, validate });
  if (compiled.size > MAX_COMPILED) {
    const [oldest, entry] = compiled.entries().next().value!;
    compiled.delete(oldest);
    // Ajv keeps every compiled schema, keyed by the object, until told otherwise.
    ajv.removeSchema(entry.schema);
  }
  return validate;
}

/** Why `value` is not a result that follows `schema`, in Ajv's words; `undefined` when it is one. */
export function resultProblems(schema: Record<string, unknown>, value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'the result must be a JSON object';
  const validate = validatorOf(schema);
  return validate(value) ? undefined : ajv.errorsText(validate.errors, { dataVar: 'result' });
}

/** `value` as the job's result, or `invalid_result` saying why not. */
export function conformingResult(schema: Record<string, unknown>, value: unknown): Record<string, unknown> {
  const problems = resultProblems(schema, value);
  if (problems !== undefined) throw new ReasonerError('invalid_result', `the result does not follow the job's response_schema: ${clip(problems, 1_500)}`);
  return value as Record<string, unknown>;
}

/** `text` cut to `max` characters, marked with `…` when cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
