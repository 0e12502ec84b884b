/** A failed job as the plugin posts it: a code of the catalogue's `JOB_ERRORS`, and a message (the catalogue's unless said). */
import { JOB_ERRORS, type JobErrorCode } from './errors.js';
import type { CodedError } from './reasoning.js';

export function jobError(code: JobErrorCode, message: string = JOB_ERRORS[code]) {
  return { error: { code, message } };
}

/**
 * A BYO job's failure as it may go in clear: its code with the catalogue's message (a reasoner's own code
 * with `reasoner_error`'s), never words of a reasoner or a check that could quote the plaintext.
 */
export function inClear({ code }: CodedError): { error: CodedError } {
  return Object.hasOwn(JOB_ERRORS, code) ? jobError(code as JobErrorCode) : { error: { code, message: JOB_ERRORS.reasoner_error } };
}
