/**
 * The Form A host's checks (spec 4.2, 2.5–2.7, 6.2, 8), in the order a host's author would fix them:
 * the routes, the stream, resuming, then what needs the script agent.
 */
import type { Check } from './check.js';
import { FORM_A_INCOMING_CHECKS } from './form-a-incoming.js';
import { FORM_A_RESUME_CHECKS } from './form-a-resume.js';
import { FORM_A_STREAM_CHECKS } from './form-a-streams.js';
import type { FormAHostContext } from './form-a-wire.js';

export type { FormAHostContext };

export const FORM_A_HOST_CHECKS: readonly Check<FormAHostContext>[] = [
  ...FORM_A_STREAM_CHECKS,
  ...FORM_A_RESUME_CHECKS,
  ...FORM_A_INCOMING_CHECKS,
];
