/** Reasoning requests for the reasoner tests: a purpose's own response schema, a deadline from now. */
import { randomUUID } from 'node:crypto';
import type { ReasoningRequest } from '../../adapters/reasoners/reasoner.js';
import { PURPOSES, jsonSchemaOf, type JobPurpose } from '../../protocol/index.js';

export interface JobOptions {
  readonly deadlineMs?: number;
  readonly signal?: AbortSignal;
  readonly response_schema?: Record<string, unknown>;
}

export function job(purpose: JobPurpose, payload: Record<string, unknown>, options: JobOptions = {}): ReasoningRequest {
  return {
    job_id: randomUUID(),
    purpose,
    payload,
    response_schema: options.response_schema ?? jsonSchemaOf(PURPOSES[purpose].result),
    deadline_at: Date.now() + (options.deadlineMs ?? 10_000),
    signal: options.signal ?? new AbortController().signal,
  };
}

export const CALL = {
  session_id: 'call-1',
  transcript: [
    { speaker: 'Ana', text: 'Thanks for joining. We have 3 items today.' },
    { speaker: 'Ben', text: 'I am worried the rollout is delayed again.' },
    { speaker: 'Ana', text: "We decided to ship the beta on Friday. I'll send the release notes." },
    { speaker: 'Ben', text: 'Can we move the review to Monday?' },
  ],
};

/** The rejection's `code` and message, for `expect(...).rejects` with a ReasonerError. */
export async function failureOf(promise: Promise<unknown>): Promise<{ name: string; code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const { name, code, message } = error as { name: string; code: string; message: string };
    return { name, code, message };
  }
  throw new Error('expected a rejection');
}
