/**
 * The port an assistant plugs its reasoning into (1.3 step 3): one job in, one result out. The plugin
 * calls `reason` once per job it takes, with the job's deadline as an abort signal, and checks what comes
 * back against the job's `response_schema` before posting it; a reasoner never posts anything itself.
 */
import type { JobPurpose } from '../../protocol/index.js';

export interface ReasoningRequest {
  readonly job_id: string;
  readonly purpose: JobPurpose;
  /** The job's payload, decrypted if it was a BYO envelope. */
  readonly payload: Record<string, unknown>;
  /** The JSON Schema the result must follow. */
  readonly response_schema: Record<string, unknown>;
  /** Epoch ms; also the moment `signal` aborts. */
  readonly deadline_at: number;
  /** Aborted at the deadline, or when the plugin stops: the reasoner should stop at once. */
  readonly signal: AbortSignal;
}

/** Why a reasoner could not answer: the job fails with this code (PROTOCOL.md's reasoner codes). */
export class ReasonerError extends Error {
  override readonly name = 'ReasonerError';
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface Reasoner {
  /** Names it in heartbeats and logs, e.g. `builtin`, `openai`. */
  readonly name: string;
  /** The model it runs, if it has one (heartbeats, capability profile). */
  readonly model?: string;
  /** The result (a JSON object), or a rejection: a `ReasonerError` with its code, or anything else (`reasoner_error`). */
  reason(request: ReasoningRequest): Promise<Record<string, unknown>>;
}
