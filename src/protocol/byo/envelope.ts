/**
 * BYO envelopes (2.2): a job's payload or result as XChaCha20-Poly1305 ciphertext under the pairing's
 * key for its direction, with a fresh random 24-byte nonce and a fresh cipher instance each time. The
 * associated data binds the envelope to its job, its purpose, its direction, the envelope version and the
 * key id, so that it cannot be moved to another job, reflected back the other way, or read as another
 * version. Browser-safe. PROTOCOL.md section 7 has the format and a worked example.
 */
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { bytesToUtf8, randomBytes, utf8ToBytes } from '@noble/ciphers/utils.js';
import { z } from 'zod';
import { fromBase64Url, lengthPrefixed, toBase64Url } from './encoding.js';
import { KID_BYTES, type SessionKeys } from './keys.js';

export const NONCE_BYTES = 24;
const TAG_BYTES = 16;

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

/** What an envelope is bound to besides its key. */
export interface EnvelopeBinding {
  readonly job_id: string;
  readonly purpose: string;
  readonly direction: Direction;
  readonly envelope_version: number;
}

/** Why an envelope did not open: each a failed job's `envelope_invalid` on the plugin's side. */
export class EnvelopeError extends Error {
  readonly code = 'envelope_invalid';
}

export function associatedData(binding: EnvelopeBinding, kid: string): Uint8Array {
  return lengthPrefixed('assistant-relay/v1/envelope', String(binding.envelope_version), binding.direction, binding.job_id, binding.purpose, kid);
}

/** Seals a JSON value; `nonce` is for worked examples and tests only: left out, it is fresh and random. */
export function seal(keys: SessionKeys, binding: EnvelopeBinding, value: unknown, nonce: Uint8Array = randomBytes(NONCE_BYTES)): ByoEnvelope {
  if (nonce.length !== NONCE_BYTES) throw new RangeError(`a nonce is ${NONCE_BYTES} bytes`);
  const cipher = xchacha20poly1305(keys[binding.direction], nonce, associatedData(binding, keys.kid));
  return { kid: keys.kid, nonce: toBase64Url(nonce), ciphertext: toBase64Url(cipher.encrypt(utf8ToBytes(JSON.stringify(value)))) };
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
  if (nonce === undefined || sealed === undefined) throw new EnvelopeError('the envelope\'s nonce or ciphertext is not strict base64url of the right length');
  const keys = keyOf(kid);
  if (keys === undefined) throw new EnvelopeError(`the envelope is sealed under key ${kid}, which this side does not hold`);
  let plaintext: Uint8Array;
  try {
    plaintext = xchacha20poly1305(keys[binding.direction], nonce, associatedData(binding, kid)).decrypt(sealed);
  } catch {
    throw new EnvelopeError('the envelope does not open: tampered, or sealed for another job, direction or version');
  }
  try {
    return JSON.parse(bytesToUtf8(plaintext)) as unknown;
  } catch {
    throw new EnvelopeError('the envelope opened but does not hold JSON');
  }
}
