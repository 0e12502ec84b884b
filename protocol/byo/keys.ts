/**
 * Key agreement (5, 2.2): X25519 between the client and the assistant, and the keys HKDF-SHA256 draws
 * from the shared secret: one per direction (the client's payloads, the assistant's results), one that
 * confirms both sides hold the same keys, and the key id envelopes name them by. Browser-safe.
 */
import { x25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { toBase64Url, lengthPrefixed } from './encoding.js';

export const X25519_KEY_BYTES = 32;
/** The length of a key id in bytes (its text is 12 base64url characters). */
export const KID_BYTES = 9;

export interface KeyPair {
  readonly secretKey: Uint8Array;
  readonly publicKey: Uint8Array;
}

/** The keys of one pairing (or of one rotation of it), named by `kid`. */
export interface SessionKeys {
  readonly kid: string;
  /** Seals payloads: the client encrypts, the assistant decrypts. */
  readonly client_to_assistant: Uint8Array;
  /** Seals results: the assistant encrypts, the client decrypts. */
  readonly assistant_to_client: Uint8Array;
  /** Confirms, in a MAC, that both sides derived the same keys; never seals an envelope. */
  readonly confirm: Uint8Array;
}

/** The keys one side holds: the newest seals what it sends, and every one it holds opens what it receives. */
export interface Keyring {
  readonly current: SessionKeys;
  keyOf(kid: string): SessionKeys | undefined;
}

/** A keyring of `keys`, newest first. */
export function keyringOf(keys: readonly SessionKeys[]): Keyring {
  if (keys.length === 0) throw new RangeError('a keyring holds at least one key');
  return { current: keys[0]!, keyOf: (kid) => keys.find((key) => key.kid === kid) };
}

/** Why a pairing (or a rotation) cannot go on. */
export class PairingError extends Error {
  constructor(
    readonly code: 'invalid_key' | 'degenerate_key' | 'commitment_mismatch' | 'confirmation_failed',
    message: string,
  ) {
    super(message);
  }
}

export function newKeyPair(): KeyPair {
  const { secretKey, publicKey } = x25519.keygen();
  return { secretKey, publicKey };
}

/** X25519; an all-zero result (the other key is of low order) or a key the curve refuses aborts. */
export function sharedSecret(secretKey: Uint8Array, publicKey: Uint8Array): Uint8Array {
  let shared: Uint8Array;
  try {
    shared = x25519.getSharedSecret(secretKey, publicKey);
  } catch {
    throw new PairingError('degenerate_key', "the other side's key is not an X25519 public key: pairing aborted");
  }
  // Constant time: OR every byte, look once.
  let bits = 0;
  for (const byte of shared) bits |= byte;
  if (bits === 0)
    throw new PairingError('degenerate_key', 'the key exchange gave an all-zero shared secret (a low-order public key): pairing aborted');
  return shared;
}

/**
 * The keys HKDF-SHA256 draws from `ikm` with `salt`, each under `info` = the transcript then its own
 * label, so the transcript (who, with which keys, under which versions) is bound into every one of them.
 */
export function deriveKeys(ikm: Uint8Array, salt: Uint8Array, transcript: Uint8Array): SessionKeys {
  const draw = (label: string, length: number) => hkdf(sha256, ikm, salt, lengthPrefixed(transcript, label), length);
  return {
    kid: toBase64Url(draw('kid', KID_BYTES)),
    client_to_assistant: draw('client_to_assistant', 32),
    assistant_to_client: draw('assistant_to_client', 32),
    confirm: draw('confirm', 32),
  };
}

/** SHA-256 of the length-prefixed parts. */
export function digestOf(...parts: ReadonlyArray<string | Uint8Array>): Uint8Array {
  return sha256(lengthPrefixed(...parts));
}
