/**
 * What the backend's engine answers a job's command with, and what it refuses before anything is logged:
 * a create that cannot be run as sent (its payload, its schema, its deadline, its size), a result over the
 * bound. What only the log can judge (a duplicate, an unknown job, a quota) the decision judges.
 */
import { z } from 'zod';
import { ByoEnvelope, HTTP_ERRORS, PURPOSES, jsonBytes, type JobCreateBody } from '../../protocol/index.js';
import { ResponseSchemaError, checkResponseSchema } from '../../protocol/response-schema.js';
import type { IntegrationSnapshot } from '../../machines/reasoning/integration.js';
import type { JobOutcome } from '../../machines/reasoning/job-decider.js';
import type { JobSnapshot } from '../../machines/reasoning/job.js';
import type { OverQuota } from '../../machines/reasoning/quotas.js';

export type JobAnswer =
  | { readonly outcome: JobOutcome; readonly job: JobSnapshot | undefined }
  /**
   * Refused before anything was logged: a create's payload that does not fit its purpose (or is not a BYO
   * envelope for a BYO job) or `response_schema` that does not compile or is beyond the bounds; a plain result
   * that does not follow the job's schema (the job stays open); a plugin its heartbeat was refused; a payload
   * or a result over `maxJobBytes`; a plain result the checker could not check within its budget (the job stays open).
   */
  | {
      readonly outcome: 'invalid';
      readonly code: InvalidCode;
      readonly job: JobSnapshot | undefined;
      readonly message: string;
    }
  /** Refused for load before anything was logged: the integration has the most open jobs it may. */
  | { readonly outcome: 'over_quota'; readonly quota: OverQuota; readonly job: undefined }
  /** Refused for load before anything was logged: the result checker takes no more now (PROTOCOL.md 6.12). */
  | {
      readonly outcome: 'busy';
      readonly code: 'too_many_result_checks';
      readonly retry_after_s: number;
      readonly message: string;
      readonly job: undefined;
    };

type InvalidCode =
  | 'invalid_payload'
  | 'invalid_response_schema'
  | 'unsupported_response_schema'
  | 'result_invalid'
  | 'plugin_refused'
  | 'byo_required'
  | 'invalid_deadline'
  | 'payload_too_large'
  | 'result_too_large'
  | 'result_check_too_costly';

/** What a decision refused before anything was logged, and why. */
export interface Invalid {
  readonly invalid: InvalidCode;
  readonly message: string;
}

/** Why a job's payload or result of `bytes` is over `maxJobBytes`. */
export function overBoundMessage(what: 'payload' | 'result', bytes: number, maxJobBytes: number): string {
  return `the job's ${what} is ${bytes} bytes of JSON, more than the ${maxJobBytes} this backend takes`;
}

/**
 * Why a create cannot be taken as sent, whatever the log holds, or `undefined`: a paired integration's job
 * must be BYO, the payload must fit the bound and its purpose (or be an envelope), a `response_schema` must
 * compile within the bounds, and a BYO job must name its deadline.
 */
export function createRefusal(body: JobCreateBody, integration: IntegrationSnapshot, maxJobBytes: number): Invalid | undefined {
  // A paired integration's plugin takes only sealed jobs (PROTOCOL.md 7.13): a plain one could never run.
  if (integration.context.paired && !body.byo) return { invalid: 'byo_required', message: HTTP_ERRORS.byo_required.message };
  const bytes = jsonBytes(body.payload);
  if (bytes > maxJobBytes) return { invalid: 'payload_too_large', message: overBoundMessage('payload', bytes, maxJobBytes) };
  const payload = body.byo ? ByoEnvelope.safeParse(body.payload) : PURPOSES[body.purpose].payload.safeParse(body.payload);
  if (!payload.success) return { invalid: 'invalid_payload', message: z.prettifyError(payload.error) };
  if (body.response_schema !== undefined) {
    try {
      checkResponseSchema(body.response_schema);
    } catch (error) {
      if (!(error instanceof ResponseSchemaError)) throw error;
      return { invalid: error.code, message: error.message };
    }
  }
  // A BYO job's deadline is bound into its envelope, so the client chooses it (PROTOCOL.md 6.7, 7.3).
  if (body.byo && body.deadline_at === undefined)
    return { invalid: 'invalid_deadline', message: 'a BYO job needs deadline_at: its envelope binds it' };
  return undefined;
}
