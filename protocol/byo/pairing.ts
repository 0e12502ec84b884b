/**
 * Authenticated pairing (5): the client and the assistant agree on keys through a backend that only
 * carries their messages, and a relay in the middle can neither read what follows nor go unnoticed.
 *
 * - The pairing code: a handle (the backend's, to find the pairing) and a secret (the client's, never
 *   sent to the backend), carried to the assistant's side by a person. The secret is HKDF's salt, so a
 *   relay without it derives other keys, and the key confirmation fails.
 * - Commit, then reveal: the assistant commits to its public key and a random nonce before it sees the
 *   client's key, and reveals both after; the short authentication string (SAS) each side shows is a hash
 *   of both keys and that nonce, so a relay cannot search for keys that give two matching strings.
 * - Key confirmation: each side proves, with a MAC under the confirmation key, that it derived the same
 *   keys; the client first, the assistant after it checked the client's.
 *
 * Browser-safe. The message order and every value are in PROTOCOL.md section 7.
 */
import { equalBytes, randomBytes } from '@noble/ciphers/utils.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { fromBase64Url, lengthPrefixed, toBase64Url } from './encoding.js';
import { PairingError, X25519_KEY_BYTES, deriveKeys, digestOf, newKeyPair, sharedSecret, type KeyPair, type SessionKeys } from './keys.js';

/** Crockford's base32: no I, L, O or U, so a person can read a code aloud and type it back. */
export const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export const HANDLE_LENGTH = 5;
/** 15 characters: 75 bits, far past what a relay could guess while a pairing lasts. */
export const SECRET_LENGTH = 15;
export const REVEAL_NONCE_BYTES = 32;

export interface PairingCode {
  /** The backend's: finds the pairing. */
  readonly handle: string;
  /** The client's: salts the keys; the backend never sees it. */
  readonly secret: string;
}

/** Protocol versions the pairing is made under; bound into every key. */
export interface PairingVersions {
  readonly schema_version: number;
  readonly envelope_version: number;
}

/** Random Crockford characters (a byte's low 5 bits: 256 is a multiple of 32, so each is uniform). */
export function crockfordRandom(length: number): string {
  return [...randomBytes(length)].map((byte) => CROCKFORD[byte & 31]).join('');
}

/** `HHHHH-SSSSS-SSSSS-SSSSS`. */
export function formatCode({ handle, secret }: PairingCode): string {
  return [handle, secret.slice(0, 5), secret.slice(5, 10), secret.slice(10)].join('-');
}

/** A code as a person typed it: any case, dashes and spaces anywhere, I and L for 1, O for 0. */
export function parseCode(text: string): PairingCode | undefined {
  const normalized = text.toUpperCase().replace(/[\s-]/g, '').replace(/[IL]/g, '1').replace(/O/g, '0');
  if (normalized.length !== HANDLE_LENGTH + SECRET_LENGTH || [...normalized].some((c) => !CROCKFORD.includes(c))) return undefined;
  return { handle: normalized.slice(0, HANDLE_LENGTH), secret: normalized.slice(HANDLE_LENGTH) };
}

function publicKeyOf(text: string, whose: string): Uint8Array {
  const key = fromBase64Url(text, { bytes: X25519_KEY_BYTES });
  if (key === undefined) throw new PairingError('invalid_key', `the ${whose} key is not 32 bytes of strict base64url`);
  return key;
}

export function commitmentOf(pairingId: string, assistantKey: Uint8Array, revealNonce: Uint8Array): Uint8Array {
  return digestOf('assistant-relay/v1/commit', pairingId, assistantKey, revealNonce);
}

/** Six digits, shown as `123 456`: what a person compares on both screens. */
export function sasOf(pairingId: string, clientKey: Uint8Array, assistantKey: Uint8Array, revealNonce: Uint8Array): string {
  const digest = digestOf('assistant-relay/v1/sas', pairingId, clientKey, assistantKey, revealNonce);
  const digits = String(new DataView(digest.buffer, digest.byteOffset).getUint32(0) % 1_000_000).padStart(6, '0');
  return `${digits.slice(0, 3)} ${digits.slice(3)}`;
}

/** The transcript every key is bound to: the pairing, both keys in role order, the commitment, the versions. */
export function pairingTranscript(
  pairingId: string,
  clientKey: Uint8Array,
  assistantKey: Uint8Array,
  commitment: Uint8Array,
  versions: PairingVersions,
): Uint8Array {
  return lengthPrefixed(
    'assistant-relay/v1/pairing',
    pairingId,
    clientKey,
    assistantKey,
    commitment,
    `schema_version=${versions.schema_version}`,
    `envelope_version=${versions.envelope_version}`,
  );
}

/** HKDF's salt in a pairing: the code's secret (its 15 canonical characters, as `parseCode` gives them), hashed. */
export function pairingSalt(secret: string): Uint8Array {
  return digestOf('assistant-relay/v1/pairing-code', secret);
}

/** The keys of a pairing: X25519, then HKDF-SHA256 salted with the code's secret over the transcript. */
export function pairingKeys(shared: Uint8Array, secret: string, transcript: Uint8Array): SessionKeys {
  return deriveKeys(shared, pairingSalt(secret), transcript);
}

export function confirmationOf(keys: SessionKeys, role: 'client' | 'assistant'): string {
  return toBase64Url(hmac(sha256, keys.confirm, lengthPrefixed('assistant-relay/v1/confirm', role)));
}

function checkConfirmation(keys: SessionKeys, role: 'client' | 'assistant', presented: string): void {
  const expected = fromBase64Url(confirmationOf(keys, role), { bytes: 32 })!;
  const given = fromBase64Url(presented, { bytes: 32 });
  if (given === undefined || !equalBytes(expected, given)) {
    throw new PairingError(
      'confirmation_failed',
      `the ${role}'s key confirmation does not match: a wrong pairing code, or someone in the middle`,
    );
  }
}

/** Fixed values instead of fresh random ones: for the worked example and tests only. */
export interface PairingFixture {
  readonly keyPair?: KeyPair;
  readonly revealNonce?: Uint8Array;
}

/** The client's side: starts the pairing, shows the code, sends its key once it has the commitment. */
export class ClientPairing {
  private readonly keyPair: KeyPair;
  private commitment: Uint8Array | undefined;
  private keys: SessionKeys | undefined;

  constructor(
    readonly pairingId: string,
    private readonly secret: string,
    private readonly versions: PairingVersions,
    fixture: PairingFixture = {},
  ) {
    this.keyPair = fixture.keyPair ?? newKeyPair();
  }

  /** The client's key, once the assistant has committed to its own (never before). */
  clientKey(commitment: string): string {
    const bytes = fromBase64Url(commitment, { bytes: 32 });
    if (bytes === undefined) throw new PairingError('commitment_mismatch', 'the commitment is not 32 bytes of strict base64url');
    this.commitment = bytes;
    return toBase64Url(this.keyPair.publicKey);
  }

  /** The assistant's reveal: checked against its commitment; gives the SAS to show and the client's confirmation. */
  reveal(assistantKeyText: string, revealNonceText: string): { readonly sas: string; readonly confirmation: string } {
    if (this.commitment === undefined) throw new PairingError('commitment_mismatch', 'a reveal before any commitment');
    const assistantKey = publicKeyOf(assistantKeyText, "assistant's");
    const revealNonce = fromBase64Url(revealNonceText, { bytes: REVEAL_NONCE_BYTES });
    if (revealNonce === undefined || !equalBytes(commitmentOf(this.pairingId, assistantKey, revealNonce), this.commitment)) {
      throw new PairingError('commitment_mismatch', "the assistant's key is not the one it committed to");
    }
    const shared = sharedSecret(this.keyPair.secretKey, assistantKey);
    this.keys = pairingKeys(
      shared,
      this.secret,
      pairingTranscript(this.pairingId, this.keyPair.publicKey, assistantKey, this.commitment, this.versions),
    );
    return {
      sas: sasOf(this.pairingId, this.keyPair.publicKey, assistantKey, revealNonce),
      confirmation: confirmationOf(this.keys, 'client'),
    };
  }

  /** The assistant's confirmation: the pairing's keys, if it matches. */
  finish(assistantConfirmation: string): SessionKeys {
    if (this.keys === undefined) throw new PairingError('confirmation_failed', 'a confirmation before the reveal');
    checkConfirmation(this.keys, 'assistant', assistantConfirmation);
    return this.keys;
  }
}

/** The assistant's side: joins with the code, commits, reveals once it has the client's key. */
export class AssistantPairing {
  private readonly keyPair: KeyPair;
  private readonly revealNonce: Uint8Array;
  private keys: SessionKeys | undefined;

  constructor(
    readonly pairingId: string,
    private readonly secret: string,
    private readonly versions: PairingVersions,
    fixture: PairingFixture = {},
  ) {
    this.keyPair = fixture.keyPair ?? newKeyPair();
    this.revealNonce = fixture.revealNonce ?? randomBytes(REVEAL_NONCE_BYTES);
  }

  commitment(): string {
    return toBase64Url(commitmentOf(this.pairingId, this.keyPair.publicKey, this.revealNonce));
  }

  /** The client's key: the assistant's key and nonce to reveal, and the SAS to show. */
  reveal(clientKeyText: string): { readonly assistant_key: string; readonly nonce: string; readonly sas: string } {
    const clientKey = publicKeyOf(clientKeyText, "client's");
    const shared = sharedSecret(this.keyPair.secretKey, clientKey);
    const commitment = commitmentOf(this.pairingId, this.keyPair.publicKey, this.revealNonce);
    this.keys = pairingKeys(
      shared,
      this.secret,
      pairingTranscript(this.pairingId, clientKey, this.keyPair.publicKey, commitment, this.versions),
    );
    const sas = sasOf(this.pairingId, clientKey, this.keyPair.publicKey, this.revealNonce);
    return { assistant_key: toBase64Url(this.keyPair.publicKey), nonce: toBase64Url(this.revealNonce), sas };
  }

  /** The client's confirmation, checked: the assistant's own, and the pairing's keys. */
  confirm(clientConfirmation: string): { readonly confirmation: string; readonly keys: SessionKeys } {
    if (this.keys === undefined) throw new PairingError('confirmation_failed', 'a confirmation before the reveal');
    checkConfirmation(this.keys, 'client', clientConfirmation);
    return { confirmation: confirmationOf(this.keys, 'assistant'), keys: this.keys };
  }
}
