/**
 * BYO envelopes (2.2): a job's payload or result as XChaCha20-Poly1305 ciphertext under the pairing's
 * key for its direction. The associated data binds the envelope to every field of its job that the
 * assistant acts on (the integration, the job, its purpose, deadline and `response_schema`, the versions),
 * to its direction and to the key id: a relay that rewrites any of them makes the envelope fail to open.
 * The nonce is synthetic (SIV-style): derived from the key, the associated data and the plaintext, so the
 * same job sealed again is the same bytes (a retried create is the same job) and nothing else repeats a
 * nonce. Browser-safe. PROTOCOL.md section 7 (7.2, 7.3) has the format and a worked example.
 */
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { bytesToUtf8, utf8ToBytes } from '@noble/ciphers/utils.js';
import { expand } from '@noble/hashes/hkdf.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import canonicalize from 'canonicalize';
import { z } from 'zod';
import { RecentlyUsed } from './recently-used.js';
import { fromBase64Url, lengthPrefix, lengthPrefixed, toBase64Url } from './encoding.js';
import { KID_BYTES, type SessionKeys } from './keys.js';

export const NONCE_BYTES = 24;
const TAG_BYTES = 16;
/** Names this binding of the associated data; an envelope sealed under another label never opens here. */
const AD_LABEL = 'assistant-relay/v1/job-envelope';
const NONCE_KEY_INFO = 'assistant-relay/v1/envelope-nonce';

const base64url = (chars: string) => new RegExp(`^[A-Za-z0-9_-]${chars}$`);

/**
 * The envelope as the wire carries it. The backend checks this shape and nothing more (it holds no key);
 * fields a later envelope version adds pass through it.
 */
export const ByoEnvelope = z.looseObject({
  /** Which keys sealed it: the pairing's, or one of its rotations'. */
  kid: z.string().regex(base64url(`{${Math.ceil((KID_BYTES * 4) / 3)}}`), 'a key id: 12 base64url characters'),
  nonce: z.string().regex(base64url(`{${Math.ceil((NONCE_BYTES * 4) / 3)}}`), 'a 24-byte nonce: 32 base64url characters'),
  ciphertext: z.string().regex(base64url(`{${Math.ceil((TAG_BYTES * 4) / 3)},}`), 'base64url ciphertext with its 16-byte tag'),
});
export type ByoEnvelope = z.infer<typeof ByoEnvelope>;

/** Who sealed it: the client (a payload) or the assistant (a result). */
export type Direction = 'client_to_assistant' | 'assistant_to_client';

/** What an envelope is bound to besides its key: the job as the client created it, and the direction. */
export interface EnvelopeBinding {
  readonly direction: Direction;
  /** Each side's own: the client's from its keys file, the plugin's from its configuration; never the wire's. */
  readonly integration_id: string;
  readonly job_id: string;
  readonly purpose: string;
  /** ISO 8601 UTC with milliseconds, as the create body and the job envelope carry it. */
  readonly deadline_at: string;
  /** Bound as the SHA-256 of its RFC 8785 canonical JSON. */
  readonly response_schema: Record<string, unknown>;
  readonly schema_version: number;
  readonly envelope_version: number;
}

/** Why an envelope did not open: each a failed job's `envelope_invalid` on the plugin's side. */
export class EnvelopeError extends Error {
  readonly code = 'envelope_invalid';
}

/**
 * The digests of the schemas lately bound, by their JSON text: a job's envelopes are opened and sealed
 * on each side, each time with the schema's canonical JSON hashed, and most jobs carry one of a few schemas.
 */
const digests = new RecentlyUsed<Uint8Array>(64);

/** SHA-256 of the schema's RFC 8785 (JCS) canonical JSON: the same schema gives the same digest whatever its key order. */
export function responseSchemaDigest(schema: Record<string, unknown>): Uint8Array {
  // A copy: the memo's own bytes are never the caller's to change.
  return digests.of(schema, (same) => sha256(utf8ToBytes(canonicalize(same)!))).slice();
}

export function associatedData(binding: EnvelopeBinding, kid: string): Uint8Array {
  return lengthPrefixed(
    AD_LABEL,
    String(binding.envelope_version),
    String(binding.schema_version),
    binding.direction,
    binding.integration_id,
    binding.job_id,
    binding.purpose,
    // `byo`: only a BYO job has envelopes.
    'true',
    binding.deadline_at,
    responseSchemaDigest(binding.response_schema),
    kid,
  );
}

/**
 * The synthetic nonce: the first 24 bytes of HMAC-SHA256, under a key drawn from the sealing key for
 * this use only, of the associated data and the plaintext. Equal only for equal (job, plaintext) pairs.
 */
export function syntheticNonce(key: Uint8Array, ad: Uint8Array, plaintext: Uint8Array): Uint8Array {
  // lengthPrefixed(ad, plaintext), fed in its parts: the plaintext is not copied.
  const mac = hmac.create(sha256, nonceKeyOf(key)).update(lengthPrefix(ad.length)).update(ad);
  return mac.update(lengthPrefix(plaintext.length)).update(plaintext).digest().slice(0, NONCE_BYTES);
}

/** The key a sealing key's nonces are drawn under: HKDF-Expand of it for this one use (the memo's own bytes: read, never change). */
export function nonceKeyOf(key: Uint8Array): Uint8Array {
  let nonceKey = nonceKeys.get(key);
  if (nonceKey === undefined) nonceKeys.set(key, (nonceKey = expand(sha256, key, utf8ToBytes(NONCE_KEY_INFO), 32)));
  return nonceKey;
}

/** Each sealing key's nonce key, drawn once: a keyring's keys are the same arrays from one envelope to the next. */
const nonceKeys = new WeakMap<Uint8Array, Uint8Array>();

/** Seals a JSON value for `binding`: the same value for the same binding under the same keys is the same envelope. */
export function seal(keys: SessionKeys, binding: EnvelopeBinding, value: unknown): ByoEnvelope {
  const key = keys[binding.direction];
  const ad = associatedData(binding, keys.kid);
  const plaintext = utf8ToBytes(JSON.stringify(value));
  const nonce = syntheticNonce(key, ad, plaintext);
  return { kid: keys.kid, nonce: toBase64Url(nonce), ciphertext: toBase64Url(xchacha20poly1305(key, nonce, ad).encrypt(plaintext)) };
}

/**
 * Opens an envelope sealed for `binding` under one of the keys `keyOf` knows, and parses its JSON. Every
 * failure is an `EnvelopeError` that says which check failed, never what the plaintext held.
 */
export function open(keyOf: (kid: string) => SessionKeys | undefined, binding: EnvelopeBinding, envelope: unknown): unknown {
  const parsed = ByoEnvelope.safeParse(envelope);
  if (!parsed.success) throw new EnvelopeError('the envelope is not a BYO envelope (kid, nonce, ciphertext in base64url)');
  const { kid } = parsed.data;
  const nonce = fromBase64Url(parsed.data.nonce, { bytes: NONCE_BYTES });
  const sealed = fromBase64Url(parsed.data.ciphertext, { atLeast: TAG_BYTES });
  if (nonce === undefined || sealed === undefined)
    throw new EnvelopeError("the envelope's nonce or ciphertext is not strict base64url of the right length");
  const keys = keyOf(kid);
  if (keys === undefined) throw new EnvelopeError(`the envelope is sealed under key ${kid}, which this side does not hold`);
  let ad: Uint8Array;
  try {
    ad = associatedData(binding, kid);
  } catch {
    // A response_schema with a lone surrogate has no canonical JSON: no envelope can be bound to it.
    throw new EnvelopeError("the job's response_schema has no canonical JSON (RFC 8785): no envelope is bound to it");
  }
  let plaintext: Uint8Array;
  try {
    plaintext = xchacha20poly1305(keys[binding.direction], nonce, ad).decrypt(sealed);
  } catch {
    throw new EnvelopeError('the envelope does not open: tampered, or sealed for another job or other job fields, direction or version');
  }
  try {
    return JSON.parse(bytesToUtf8(plaintext)) as unknown;
  } catch {
    throw new EnvelopeError('the envelope opened but does not hold JSON');
  }
}
