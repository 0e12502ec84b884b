/**
 * A job's `response_schema` (2.1, 4.1): a JSON Schema (draft 2020-12) its result must follow, checked with
 * Ajv wherever a result is judged (the reasoners, the plugin, the backend, the client), so that all judge
 * alike. It comes from a client, so it is hostile: before Ajv sees it, it must keep the bounds of
 * schema-bounds.ts (PROTOCOL.md 6.7); its patterns run on RE2 (linear-regexp.ts); `uniqueItems` is
 * checked in linear time (Ajv's own compares every pair of items); a check stops at the first problem
 * (every problem of a large result would be a message of megabytes).
 * Compiled schemas are kept, newest use last and within a bound: the purposes' few schemas stay, while a
 * flood of clients' own schemas cannot grow memory. Each is compiled by an Ajv of its own, since an Ajv
 * keeps whatever it ever compiled. Browser-safe.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { PatternWorkExceeded, UnsupportedPattern, linearRegExp, withinPatternWork } from './linear-regexp.js';
import { RecentlyUsed } from './byo/recently-used.js';
import { boundsProblem } from './schema-bounds.js';

export { RESPONSE_SCHEMA_LIMITS } from './schema-bounds.js';

const OPTIONS = { strict: false, logger: false, allErrors: false } as const;

/** Judges a schema against the draft 2020-12 meta-schema (whose own patterns are ours). */
const meta = new Ajv2020(OPTIONS);
addFormats.default(meta);

const compiled = new RecentlyUsed<ValidateFunction>(64);

/** Why a schema is refused: `invalid_response_schema`, not a JSON Schema; `unsupported_response_schema`, one this relay does not check. */
export type ResponseSchemaErrorCode = 'invalid_response_schema' | 'unsupported_response_schema';

/** A `response_schema` that is refused, with the code that says why. */
export class ResponseSchemaError extends Error {
  override readonly name = 'ResponseSchemaError';
  constructor(
    readonly code: ResponseSchemaErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

function compile(schema: Record<string, unknown>): ValidateFunction {
  const problem = boundsProblem(schema);
  if (problem !== undefined) throw new ResponseSchemaError('unsupported_response_schema', problem);
  let valid: boolean;
  try {
    valid = meta.validateSchema(schema) as boolean;
  } catch (error) {
    // A `$schema` naming another dialect.
    throw new ResponseSchemaError(
      'invalid_response_schema',
      `the response_schema is not a JSON Schema (draft 2020-12): ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (!valid)
    throw new ResponseSchemaError(
      'invalid_response_schema',
      `the response_schema is not a JSON Schema (draft 2020-12): ${meta.errorsText(meta.errors, { dataVar: 'response_schema' })}`,
    );
  // `addUsedSchema: false`: the schema's `$id` is no key of anything, and resolves nothing elsewhere.
  const ajv = new Ajv2020({ ...OPTIONS, meta: false, validateSchema: false, addUsedSchema: false, code: { regExp: linearRegExp } });
  addFormats.default(ajv);
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({ keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', validate: uniqueItems });
  try {
    return ajv.compile(schema);
  } catch (error) {
    if (error instanceof UnsupportedPattern) throw new ResponseSchemaError('unsupported_response_schema', error.message, { cause: error });
    throw new ResponseSchemaError('invalid_response_schema', `the response_schema does not compile: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

const validatorOf = (schema: Record<string, unknown>): ValidateFunction => compiled.of(schema, compile);

/** Throws `ResponseSchemaError` unless `schema` keeps the bounds and compiles. */
export function checkResponseSchema(schema: Record<string, unknown>): void {
  validatorOf(schema);
}

/**
 * Why `value` is not a result that follows `schema`, in Ajv's words (its first problem); `undefined` when
 * it is one. A result whose check would examine more than the patterns' bound allows is not one either.
 * Throws `ResponseSchemaError` for a schema that is refused.
 */
export function resultProblems(schema: Record<string, unknown>, value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'the result must be a JSON object';
  const validate = validatorOf(schema);
  try {
    return withinPatternWork(() => validate(value)) ? undefined : meta.errorsText(validate.errors, { dataVar: 'result' });
  } catch (error) {
    if (error instanceof PatternWorkExceeded) return error.message;
    throw error;
  }
}

/** `uniqueItems` by JSON Schema's equality (numbers by value, objects whatever their members' order), in one pass. */
function uniqueItems(wanted: boolean, items: unknown[]): boolean {
  if (!wanted) return true;
  const seen = new Map<string, number>();
  for (const [j, item] of items.entries()) {
    const key = canonical(item);
    const i = seen.get(key);
    if (i !== undefined) {
      const error: Partial<ErrorObject> = {
        keyword: 'uniqueItems',
        message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
        params: { i, j },
      };
      uniqueItems.errors = [error];
      return false;
    }
    seen.set(key, j);
  }
  return true;
}
uniqueItems.errors = [] as Array<Partial<ErrorObject>>;

/** JSON text that two values share exactly when JSON Schema calls them equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value)
      .sort()
      .map((name) => `${JSON.stringify(name)}:${canonical((value as Record<string, unknown>)[name])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}
