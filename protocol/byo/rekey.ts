/**
 * Key rotation of a pairing (5, PROTOCOL.md 7.12): a fresh X25519 exchange, authenticated under the
 * pairing's current keys instead of by a person. The client asks with a MAC under the current
 * confirmation key; the new keys are salted with a value only holders of the current keys can compute,
 * and the assistant's answer carries a MAC under the new confirmation key, so a relay can neither start a
 * rotation nor finish one. The new keys get a new `kid`; both sides keep the previous ones, so envelopes
 * in flight under them still open. Browser-safe.
 */
import { equalBytes } from '@noble/ciphers/utils.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { fromBase64Url, lengthPrefixed, toBase64Url } from './encoding.js';
import {
  PairingError,
  X25519_KEY_BYTES,
  deriveKeys,
  newKeyPair,
  sharedSecret,
  type KeyPair,
  type Keyring,
  type SessionKeys,
} from './keys.js';

/** What the client sends (through the backend) to rotate the keys. */
export interface RekeyRequest {
  readonly rekey_id: string;
  /** The keys the request is made under: the current ones. */
  readonly kid: string;
  readonly client_key: string;
  readonly mac: string;
}

/** What the assistant answers. */
export interface RekeyAnswer {
  readonly assistant_key: string;
  readonly mac: string;
}

const mac = (key: Uint8Array, ...parts: string[]) => toBase64Url(hmac(sha256, key, lengthPrefixed(...parts)));

function macMatches(expected: string, presented: string): boolean {
  const given = fromBase64Url(presented, { bytes: 32 });
  return given !== undefined && equalBytes(fromBase64Url(expected, { bytes: 32 })!, given);
}

function requestMac(current: SessionKeys, integrationId: string, rekeyId: string, clientKey: string): string {
  return mac(current.confirm, 'assistant-relay/v1/rekey-request', integrationId, rekeyId, current.kid, clientKey);
}

/** A rotation's HKDF salt: a MAC under the current confirmation key, which only holders of the current keys can compute. */
export function rekeySalt(current: SessionKeys, rekeyId: string): Uint8Array {
  return hmac(sha256, current.confirm, lengthPrefixed('assistant-relay/v1/rekey-salt', rekeyId));
}

/** What a rotation's keys are bound to. The public keys enter as their base64url text, as the messages carry them (7.15). */
export function rekeyTranscript(integrationId: string, rekeyId: string, kid: string, clientKey: string, assistantKey: string): Uint8Array {
  return lengthPrefixed('assistant-relay/v1/rekey', integrationId, rekeyId, kid, clientKey, assistantKey);
}

/** The new keys: X25519, then HKDF with the rotation's salt over its transcript. */
function rotatedKeys(
  current: SessionKeys,
  integrationId: string,
  rekeyId: string,
  shared: Uint8Array,
  clientKey: string,
  assistantKey: string,
): SessionKeys {
  return deriveKeys(shared, rekeySalt(current, rekeyId), rekeyTranscript(integrationId, rekeyId, current.kid, clientKey, assistantKey));
}

function publicKey(text: string): Uint8Array {
  const key = fromBase64Url(text, { bytes: X25519_KEY_BYTES });
  if (key === undefined) throw new PairingError('invalid_key', 'a rotation key is not 32 bytes of strict base64url');
  return key;
}

/** The client's side of one rotation. */
export class ClientRekey {
  private readonly keyPair: KeyPair;

  constructor(
    private readonly integrationId: string,
    private readonly current: SessionKeys,
    readonly rekeyId: string,
    fixture: { readonly keyPair?: KeyPair } = {},
  ) {
    this.keyPair = fixture.keyPair ?? newKeyPair();
  }

  request(): RekeyRequest {
    const client_key = toBase64Url(this.keyPair.publicKey);
    return {
      rekey_id: this.rekeyId,
      kid: this.current.kid,
      client_key,
      mac: requestMac(this.current, this.integrationId, this.rekeyId, client_key),
    };
  }

  /** The assistant's answer, checked: the new keys. */
  finish(answer: RekeyAnswer): SessionKeys {
    const shared = sharedSecret(this.keyPair.secretKey, publicKey(answer.assistant_key));
    const keys = rotatedKeys(
      this.current,
      this.integrationId,
      this.rekeyId,
      shared,
      toBase64Url(this.keyPair.publicKey),
      answer.assistant_key,
    );
    if (!macMatches(answerMac(keys), answer.mac))
      throw new PairingError('confirmation_failed', "the assistant's answer to the rotation does not confirm the new keys");
    return keys;
  }
}

function answerMac(keys: SessionKeys): string {
  return mac(keys.confirm, 'assistant-relay/v1/rekey-answer', 'assistant');
}

/**
 * The assistant's side: checks the request under the keys it names, and answers it with a fresh key
 * (`keyPair` is for worked examples and tests only). A side that is asked the same again answers with
 * what it answered, kept with the new keys: it never derives a second set for one rotation.
 */
export function answerRekey(
  integrationId: string,
  keyring: Keyring,
  request: RekeyRequest,
  keyPair: KeyPair = newKeyPair(),
): { readonly answer: RekeyAnswer; readonly keys: SessionKeys } {
  const current = keyring.keyOf(request.kid);
  if (current === undefined || !macMatches(requestMac(current, integrationId, request.rekey_id, request.client_key), request.mac)) {
    throw new PairingError('confirmation_failed', 'the rotation request is not made under keys this side holds');
  }
  const shared = sharedSecret(keyPair.secretKey, publicKey(request.client_key));
  const assistant_key = toBase64Url(keyPair.publicKey);
  const keys = rotatedKeys(current, integrationId, request.rekey_id, shared, request.client_key, assistant_key);
  return { answer: { assistant_key, mac: answerMac(keys) }, keys };
}
