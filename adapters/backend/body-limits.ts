/** How large a body each of the backend's routes reads before it refuses it (413 `body_too_large`), unparsed. */
import { RESPONSE_SCHEMA_LIMITS } from '../../protocol/response-schema.js';

/** Every route's body but a job's create and result: pairing messages, heartbeats and tokens are small. */
export const BACKEND_BODY_LIMIT = 1024 * 1024;

/**
 * The body of a job's create or result, whose payload or result may be `maxJobBytes` of compact JSON: four
 * times that and the schema's bound, for how a client may write the same JSON (`\u00e9` is six bytes for
 * two; whitespace) and the rest of the body. Past the job bound but within this, the engine answers 413
 * `payload_too_large` or `result_too_large`.
 */
export function jobBodyLimit(maxJobBytes: number): number {
  return 4 * (maxJobBytes + RESPONSE_SCHEMA_LIMITS.maxBytes);
}
