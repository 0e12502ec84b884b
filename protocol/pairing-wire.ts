/**
 * The pairing's messages as the backend carries them (5, PROTOCOL.md 7): every body of `/api/v1/pairings`
 * and what each answers. Keys, the commitment, the nonce and the confirmations are 32 bytes as strict
 * base64url (43 characters); the backend checks their shape and cannot judge more.
 */
import { z } from 'zod';
import { fails } from './errors.js';
import { isUuid } from './ids.js';
import { CROCKFORD, HANDLE_LENGTH } from './byo/pairing.js';
import { ENVELOPE_VERSION, SCHEMA_VERSION } from './reasoning.js';

const Bytes32 = z.string().regex(/^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/, '32 bytes as strict base64url (43 characters)');
const Version = z.number().int().positive();

export const PairingPath = z.object({ id: z.string().refine(isUuid, fails('invalid_pairing_id')) });

/** The client starts a pairing (`POST /api/v1/pairings`). */
export const PairingStartBody = z.strictObject({
  provider_kind: z.string().min(1).max(100).default('assistant-relay'),
  schema_version: Version.default(SCHEMA_VERSION),
  envelope_version: Version.default(ENVELOPE_VERSION),
  /** A pairing ticket the operator issued: what a backend with the `ticket` policy asks for (PROTOCOL.md 7.8). */
  ticket: z.string().min(1).max(200).optional(),
});
export type PairingStartBody = z.infer<typeof PairingStartBody>;

/** The operator issues a pairing ticket (`POST /api/v1/admin/pairing-tickets`), valid for `ttl_ms`: 1 minute to 7 days, a day unless said. */
export const PairingTicketBody = z.strictObject({
  ttl_ms: z
    .number()
    .int()
    .min(60_000)
    .max(7 * 86_400_000)
    .default(86_400_000),
});

/** The ticket, shown this once: one pairing may start with it before `expires_at`. */
export const PairingTicketAnswer = z.object({ ticket: z.string(), expires_at: z.iso.datetime() });
export type PairingTicketAnswer = z.infer<typeof PairingTicketAnswer>;

/** What the client keeps: the handle goes into the code it shows; the token carries its later messages. */
export const PairingStartAnswer = z.object({
  pairing_id: z.uuid(),
  handle: z.string(),
  pairing_token: z.string(),
  expires_at: z.iso.datetime(),
});
export type PairingStartAnswer = z.infer<typeof PairingStartAnswer>;

/** The assistant's side joins with the handle of the code a person gave it (`POST /api/v1/pairings/join`). */
export const PairingJoinBody = z.strictObject({
  handle: z.string().regex(new RegExp(`^[${CROCKFORD}]{${HANDLE_LENGTH}}$`), `the pairing code's first ${HANDLE_LENGTH} characters`),
});

export const PairingJoinAnswer = z.object({
  pairing_id: z.uuid(),
  provider_kind: z.string(),
  schema_version: Version,
  envelope_version: Version,
  pairing_token: z.string(),
  expires_at: z.iso.datetime(),
});
export type PairingJoinAnswer = z.infer<typeof PairingJoinAnswer>;

export const CommitBody = z.strictObject({ commitment: Bytes32 });
export const ClientKeyBody = z.strictObject({ client_key: Bytes32 });
export const RevealBody = z.strictObject({ assistant_key: Bytes32, nonce: Bytes32 });
export const ConfirmBody = z.strictObject({ confirmation: Bytes32 });
export const AbortBody = z.strictObject({ reason: z.string().min(1).max(500) });

/** The client's confirmation is answered with its token for the integration, shown this once. */
export const ClientConfirmAnswer = z.object({ client_token: z.string() });
export type ClientConfirmAnswer = z.infer<typeof ClientConfirmAnswer>;

/** The assistant's confirmation completes the pairing: the integration, and its RELAY_TOKEN, shown this once. */
export const AssistantConfirmAnswer = z.object({ integration_id: z.uuid(), relay_token: z.string() });
export type AssistantConfirmAnswer = z.infer<typeof AssistantConfirmAnswer>;

export const PairingStateName = z.enum([
  'started',
  'joined',
  'committed',
  'client_key_sent',
  'revealed',
  'client_confirmed',
  'completed',
  'aborted',
  'expired',
]);

/** `GET /api/v1/pairings/{id}` with either side's pairing token: every message so far. */
export const PairingView = z.object({
  pairing_id: z.uuid(),
  provider_kind: z.string(),
  schema_version: Version,
  envelope_version: Version,
  state: PairingStateName,
  created_at: z.iso.datetime(),
  expires_at: z.iso.datetime(),
  commitment: z.string().optional(),
  client_key: z.string().optional(),
  assistant_key: z.string().optional(),
  nonce: z.string().optional(),
  client_confirmation: z.string().optional(),
  assistant_confirmation: z.string().optional(),
  integration_id: z.uuid().optional(),
  aborted: z.object({ by: z.enum(['client', 'assistant']), reason: z.string() }).optional(),
});
export type PairingView = z.infer<typeof PairingView>;

/** The client asks to rotate the keys (`POST …/integrations/{id}/rekeys`, client token). */
export const RekeyRequestBody = z.strictObject({
  rekey_id: z.uuid(),
  kid: z.string().regex(/^[A-Za-z0-9_-]{12}$/, 'a key id: 12 base64url characters'),
  client_key: Bytes32,
  mac: Bytes32,
});

/** The plugin answers it (`POST …/integrations/{id}/rekeys/{rekey_id}`, RELAY_TOKEN). */
export const RekeyAnswerBody = z.strictObject({ assistant_key: Bytes32, mac: Bytes32 });

export const RekeyPath = z.object({
  id: z.string().refine(isUuid, fails('invalid_integration_id')),
  rekey_id: z.string().refine(isUuid, fails('rekey_not_found')),
});

/** A rotation as the client reads it (`GET …/rekeys/{rekey_id}`), and as the plugin's stream carries it (`event: rekey`, without the answer). */
export const RekeyView = RekeyRequestBody.extend({
  state: z.enum(['requested', 'answered']),
  answer: RekeyAnswerBody.optional(),
});
export type RekeyView = z.infer<typeof RekeyView>;
