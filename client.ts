/**
 * `assistant-relay/client`: the client's side of the protocol, for desktop, mobile and browser apps.
 * Browser-safe: nothing here, nor anything it imports, uses a Node module (a test walks the imports).
 */
export { FormAClient } from './adapters/client/form-a.js';
export { TaskFailed, type TaskHandle } from './adapters/client/task.js';
export type { ClientTransition, FormAClientOptions } from './adapters/client/form-a-options.js';
export type { Clock } from './adapters/client/clock.js';
export { BackendClient, BackendError } from './adapters/client/backend-client.js';
export {
  PairingFailed,
  pairAsAssistant,
  pairAsClient,
  type ConfirmSas,
  type Paired,
  type PairingOptions,
} from './adapters/client/pairing.js';
export { rotateKeys } from './adapters/client/rekey.js';
export { JobsClient, type CreateJob } from './adapters/client/jobs.js';
export { JobCheckError } from './adapters/client/job-checks.js';
export { InsightsRecording, type Insight, type InsightsContext, type InsightsStore } from './adapters/client/insights.js';
export { SseParser, type SseEvent } from './protocol/sse-parser.js';
export { clientTaskState, type ClientTaskSnapshot, type ClientTaskState } from './machines/client/client-task.js';
export type { ClientSubscriptionSnapshot } from './machines/client/client-subscription.js';
export * from './protocol/byo/index.js';
export * from './protocol/wire.js';
export {
  checkResponseSchema,
  resultProblems,
  ResponseSchemaError,
  RESPONSE_SCHEMA_LIMITS,
  type ResponseSchemaErrorCode,
} from './protocol/response-schema.js';
export {
  JobView,
  JobCreateBody,
  IntegrationView,
  OPEN_JOB_STATES,
  PURPOSES,
  ENVELOPE_VERSION,
  SCHEMA_VERSION,
  type JobPurpose,
  type JobState,
} from './protocol/reasoning.js';
