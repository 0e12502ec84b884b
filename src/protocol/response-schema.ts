/**
 * A job's `response_schema` (2.1, 4.1): a JSON Schema (draft 2020-12) its result must follow, checked with
 * Ajv wherever a result is judged (the reasoners, the plugin, the backend), so that all three judge alike.
 * Compiled schemas are kept, newest use last and within a bound: the purposes' few schemas stay, while a
 * flood of clients' own schemas cannot grow memory.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

// `addUsedSchema: false`: a client's schema may carry an `$id`, and two jobs may bring two schemas with one id.
const ajv = new Ajv2020({ strict: false, allErrors: true, addUsedSchema: false });
addFormats.default(ajv);

const compiled = new Map<string, { readonly schema: object; readonly validate: ValidateFunction }>();
const MAX_COMPILED = 64;

/** A `response_schema` that does not compile as a JSON Schema. */
export class ResponseSchemaError extends Error {
  override readonly name = 'ResponseSchemaError';
}

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
    throw new ResponseSchemaError(`the response_schema does not compile: ${(error as Error).message}`, { cause: error });
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

/** Throws `ResponseSchemaError` unless `schema` compiles. */
export function checkResponseSchema(schema: Record<string, unknown>): void {
  validatorOf(schema);
}

/** Why `value` is not a result that follows `schema`, in Ajv's words; `undefined` when it is one. Throws `ResponseSchemaError` for a schema that does not compile. */
export function resultProblems(schema: Record<string, unknown>, value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'the result must be a JSON object';
  const validate = validatorOf(schema);
  return validate(value) ? undefined : ajv.errorsText(validate.errors, { dataVar: 'result' });
}
