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

/** An owner-only decision on what this node does not own (never took, or lost to another node, which does it now). */
export class NotOwnerError extends Error {
  override readonly name = 'NotOwnerError';

  constructor(readonly partition: string) {
    super(`this node does not own ${partition ? `integration ${partition}` : "the service's partition"}`);
  }
}

/**
 * Failures that are part of normal operation: a closing host refuses commands, a log that failed already
 * went to `onFatal` (or was fenced: another node owns what it acted on), and a node that does not own what
 * it acts on leaves it to the one that does.
 */
export function isExpected(error: unknown): boolean {
  return error instanceof HostClosingError || error instanceof EventLogError || error instanceof NotOwnerError;
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
