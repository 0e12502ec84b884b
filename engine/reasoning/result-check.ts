/**
 * The backend's seam for checking a plain result against its job's `response_schema` (PROTOCOL.md 6.12).
 * Within the bounds of 6.10 a check still costs up to about the schema's members × the result's bytes,
 * seconds for a hostile one, so the composition root may hand the engine a checker that runs costly
 * checks elsewhere, within a time budget and a queue (adapters/backend/result-checks.ts). The default
 * checks at once, here: what unit tests and embedders get unless they say otherwise.
 */
import { ResponseSchemaError, resultProblems } from '../../protocol/response-schema.js';

/** One plain result to check: whose it is (a checker may share its capacity fairly by integration), against what, and its size. */
export interface ResultCheck {
  readonly integrationId: string;
  readonly schema: Record<string, unknown>;
  readonly result: unknown;
  /** The result's compact JSON, in bytes (measured for `maxJobBytes` already). */
  readonly bytes: number;
}

export type ResultVerdict =
  /** Checked: why the result does not follow the schema, or `undefined` when it does. */
  | { readonly outcome: 'checked'; readonly problem: string | undefined }
  /** Not checked within the checker's time budget: refused 422 `result_check_too_costly`, the job stays open. */
  | { readonly outcome: 'too_costly'; readonly message: string }
  /** Not checked for load (the integration has a check under way, or the checker's queue is full): 429 with `Retry-After`. */
  | { readonly outcome: 'busy'; readonly retry_after_s: number; readonly message: string };

export interface ResultChecker {
  check(check: ResultCheck): ResultVerdict | Promise<ResultVerdict>;
}

/** Checks at once, on the caller's thread, however long it takes. */
export const inlineResultChecker: ResultChecker = {
  check: ({ schema, result }) => ({ outcome: 'checked', problem: problemsOf(schema, result) }),
};

/** Why a plain result does not follow its job's schema; a schema logged before the bounds of PROTOCOL.md 6.10 that they refuse checks no result. */
export function problemsOf(schema: Record<string, unknown>, result: unknown): string | undefined {
  try {
    return resultProblems(schema, result);
  } catch (error) {
    if (error instanceof ResponseSchemaError) return error.message;
    throw error;
  }
}
