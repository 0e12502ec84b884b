/**
 * A reasoner's answer against the job's `response_schema`, by the one rule every judge uses
 * (protocol/response-schema.ts), in the reasoners' terms: a failure is a `ReasonerError` with its job code.
 * Every reasoner returns only what passes, so the plugin's own check never finds a reasoner at fault.
 */
import { ResponseSchemaError, resultProblems as problemsOf } from '../../protocol/response-schema.js';
import { ReasonerError } from './reasoner.js';

/**
 * Why `value` is not a result that follows `schema`; `undefined` when it is one. A schema that does not
 * compile is `invalid_response_schema`; one beyond the bounds, or with a pattern RE2 does not run, `unsupported_response_schema`.
 */
export function reasonerResultProblems(schema: Record<string, unknown>, value: unknown): string | undefined {
  try {
    return problemsOf(schema, value);
  } catch (error) {
    if (error instanceof ResponseSchemaError)
      throw new ReasonerError(error.code, `the job's ${error.message.replace(/^the /, '')}`, { cause: error });
    throw error;
  }
}

/** `value` as the job's result, or `invalid_result` saying why not. */
export function conformingResult(schema: Record<string, unknown>, value: unknown): Record<string, unknown> {
  const problems = reasonerResultProblems(schema, value);
  if (problems !== undefined)
    throw new ReasonerError('invalid_result', `the result does not follow the job's response_schema: ${clip(problems, 1_500)}`);
  return value as Record<string, unknown>;
}

/** `text` cut to `max` characters, marked with `…` when cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
