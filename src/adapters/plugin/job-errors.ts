/** A failed job as the plugin posts it: a code of the catalogue's `JOB_ERRORS`, and a message (the catalogue's unless said). */
import { JOB_ERRORS, type JobErrorCode } from '../../protocol/index.js';

export function jobError(code: JobErrorCode, message: string = JOB_ERRORS[code]) {
  return { error: { code, message } };
}
