/**
 * Every body of the reasoning channel and of pairing, and the provider registry's file, as a JSON Schema file generated
 * from its zod schema, for other implementations, for editors and for the jobs' `response_schema`:
 * schemas/<name>.json. `npm run diagrams` writes them and a test holds the files to the schemas.
 */
import type { z } from 'zod';
import { ByoEnvelope } from './byo/envelope.js';
import {
  CapabilityProfile,
  Heartbeat,
  HeartbeatAnswer,
  IntegrationCreateBody,
  IntegrationView,
  JobCreateBody,
  JobResultBody,
  JobView,
  PURPOSES,
  ReasoningJob,
  jsonSchemaOf,
  type JobPurpose,
} from './reasoning.js';
import {
  AbortBody,
  AssistantConfirmAnswer,
  ClientConfirmAnswer,
  ClientKeyBody,
  CommitBody,
  ConfirmBody,
  PairingJoinAnswer,
  PairingJoinBody,
  PairingStartAnswer,
  PairingStartBody,
  PairingTicketAnswer,
  PairingTicketBody,
  PairingView,
  RekeyAnswerBody,
  RekeyRequestBody,
  RekeyView,
  RevealBody,
} from './pairing-wire.js';
import { ProviderRegistry } from './providers.js';

const BODIES: ReadonlyArray<readonly [string, z.ZodType]> = [
  ['reasoning-job', ReasoningJob],
  ['byo-envelope', ByoEnvelope],
  ['heartbeat', Heartbeat],
  ['heartbeat-answer', HeartbeatAnswer],
  ['capability-profile', CapabilityProfile],
  ['job-create', JobCreateBody],
  ['job-result', JobResultBody],
  ['job-view', JobView],
  ['integration-view', IntegrationView],
  ['integration-create', IntegrationCreateBody],
  ['provider-registry', ProviderRegistry],
  ['pairing/start', PairingStartBody],
  ['pairing/start-answer', PairingStartAnswer],
  ['pairing/join', PairingJoinBody],
  ['pairing/join-answer', PairingJoinAnswer],
  ['pairing/commit', CommitBody],
  ['pairing/client-key', ClientKeyBody],
  ['pairing/reveal', RevealBody],
  ['pairing/confirm', ConfirmBody],
  ['pairing/client-confirm-answer', ClientConfirmAnswer],
  ['pairing/assistant-confirm-answer', AssistantConfirmAnswer],
  ['pairing/abort', AbortBody],
  ['pairing/ticket', PairingTicketBody],
  ['pairing/ticket-answer', PairingTicketAnswer],
  ['pairing-view', PairingView],
  ['rekey/request', RekeyRequestBody],
  ['rekey/answer', RekeyAnswerBody],
  ['rekey-view', RekeyView],
];

export interface SchemaFile {
  /** Below schemas/. */
  readonly file: string;
  readonly text: string;
}

export function schemaFiles(): SchemaFile[] {
  const purposes = (Object.keys(PURPOSES) as JobPurpose[]).flatMap((purpose): Array<readonly [string, z.ZodType]> => [
    [`purposes/${purpose}.payload`, PURPOSES[purpose].payload],
    [`purposes/${purpose}.result`, PURPOSES[purpose].result],
  ]);
  return [...BODIES, ...purposes].map(([name, schema]) => ({
    file: `${name}.json`,
    text: `${JSON.stringify(jsonSchemaOf(schema), null, 2)}\n`,
  }));
}
