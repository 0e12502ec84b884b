/**
 * The engine's own failures, and how a failure nobody awaits is handled: an expected one is dropped by
 * name, anything else is reported (never swallowed).
 */
import { HTTP_ERRORS, type HttpErrorCode } from '../../protocol/index.js';
import { EventLogError } from '../../storage/errors.js';

/** Thrown by commands once `close()` has begun: nothing new enters the log of a closing host. */
export class HostClosingError extends Error {
  override readonly name = 'HostClosingError';
  readonly code = 'shutting_down' satisfies HttpErrorCode;
  constructor() {
    super(HTTP_ERRORS.shutting_down.message);
  }
}

/** Failures that are part of normal operation: a closing host refuses commands, and a log that failed already went to `onFatal`. */
export function isExpected(error: unknown): boolean {
  return error instanceof HostClosingError || error instanceof EventLogError;
}

/** Where an unawaited failure happened: `what` names the action, `event` the committed event it acted on. */
export interface FailureContext {
  readonly what: string;
  readonly event?: { readonly type: string };
  readonly session_id?: string;
}

export type ReportFailure = (error: unknown, context: FailureContext) => void;

/** Runs `work` without awaiting it; an unexpected failure is reported with `context`. */
export function inBackground(work: Promise<unknown>, report: ReportFailure, context: FailureContext): void {
  work.catch((error: unknown) => {
    if (!isExpected(error)) report(error, context);
  });
}
