/**
 * A key rotation's every value (PROTOCOL.md 7.12, 7.15) from fixed inputs, twice: by our `ClientRekey`
 * and `answerRekey`, and by hand with libsodium and node:crypto. For vectors/rekey.json and for the rekey
 * example in PROTOCOL.md, which are written in the same shape.
 */
import { expect } from 'vitest';
import {
  ClientRekey,
  answerRekey,
  keyringOf,
  lengthPrefixed,
  rekeySalt,
  rekeyTranscript,
  sharedSecret,
  type RekeyAnswer,
  type RekeyRequest,
} from '../../protocol/index.js';
import * as hand from './by-hand.js';
import { keyPairOf } from './pairing-sides.js';
import { hex, keySetOf, keySetVector, toHex, type DerivationValues, type KeySetVector } from './vector-files.js';

export interface RekeyInputs {
  readonly integration_id: string;
  /** The keys the rotation is made under: the pairing's, or the previous rotation's. */
  readonly current_keys: KeySetVector;
  readonly rekey_id: string;
  /** The rotation's fresh X25519 secret keys, fixed. */
  readonly client_secret_key_hex: string;
  readonly assistant_secret_key_hex: string;
}

export interface RekeyValues extends DerivationValues {
  readonly client_key: string;
  readonly request_mac_input_hex: string;
  readonly request: RekeyRequest;
  readonly answer_mac_input_hex: string;
  readonly answer: RekeyAnswer;
}

/** Our client asks, our assistant answers, our client checks the answer; and the bytes each MAC and HKDF took. */
export function ourRekey(inputs: RekeyInputs): RekeyValues {
  const { integration_id, rekey_id } = inputs;
  const current = keySetOf(inputs.current_keys);
  const [clientPair, assistantPair] = [keyPairOf(inputs.client_secret_key_hex), keyPairOf(inputs.assistant_secret_key_hex)];
  const client = new ClientRekey(integration_id, current, rekey_id, { keyPair: clientPair });
  const request = client.request();
  const { answer, keys } = answerRekey(integration_id, keyringOf([current]), request, assistantPair);
  expect(client.finish(answer)).toEqual(keys);
  const transcript = rekeyTranscript(integration_id, rekey_id, current.kid, request.client_key, answer.assistant_key);
  return {
    client_key: request.client_key,
    request_mac_input_hex: toHex(
      lengthPrefixed('assistant-relay/v1/rekey-request', integration_id, rekey_id, current.kid, request.client_key),
    ),
    request,
    shared_secret_hex: toHex(sharedSecret(clientPair.secretKey, assistantPair.publicKey)),
    salt_input_hex: toHex(lengthPrefixed('assistant-relay/v1/rekey-salt', rekey_id)),
    salt_hex: toHex(rekeySalt(current, rekey_id)),
    transcript_hex: toHex(transcript),
    hkdf_info_hex: Object.fromEntries(hand.KEY_LABELS.map((label) => [label, toHex(lengthPrefixed(transcript, label))])),
    keys: keySetVector(keys),
    answer_mac_input_hex: toHex(lengthPrefixed('assistant-relay/v1/rekey-answer', 'assistant')),
    answer,
  };
}

/** The request's MAC input by hand: the kid and the client's key as their base64url text's UTF-8. */
export function requestMacInputByHand(integrationId: string, rekeyId: string, kid: string, clientKey: string): Uint8Array {
  const { utf8 } = hand;
  return hand.lp(utf8('assistant-relay/v1/rekey-request'), utf8(integrationId), utf8(rekeyId), utf8(kid), utf8(clientKey));
}

/** The new keys and the answer's MAC by hand, from the client's side: its secret key and the assistant's key text. */
export function rotatedByHand(inputs: Omit<RekeyInputs, 'assistant_secret_key_hex'>, clientKey: string, assistantKey: string) {
  const { utf8, lp } = hand;
  const confirm = hex(inputs.current_keys.confirm_hex);
  const saltInput = lp(utf8('assistant-relay/v1/rekey-salt'), utf8(inputs.rekey_id));
  const transcript = lp(
    utf8('assistant-relay/v1/rekey'),
    utf8(inputs.integration_id),
    utf8(inputs.rekey_id),
    utf8(inputs.current_keys.kid),
    utf8(clientKey),
    utf8(assistantKey),
  );
  const assistantPublic = hand.decodeBase64Url(assistantKey, 32)!;
  const shared = hand.x25519(hex(inputs.client_secret_key_hex), assistantPublic);
  const salt = hand.hmacSha256(confirm, saltInput);
  const keys = hand.keysOf(shared, salt, transcript);
  const answerMacInput = lp(utf8('assistant-relay/v1/rekey-answer'), utf8('assistant'));
  const answerMac = hand.encodeBase64Url(hand.hmacSha256(keys.confirm, answerMacInput));
  return { saltInput, salt, transcript, shared, keys, answerMacInput, answerMac };
}

export function rekeyByHand(inputs: RekeyInputs): RekeyValues {
  const { integration_id, rekey_id, current_keys } = inputs;
  const client_key = hand.encodeBase64Url(hand.publicKeyOf(hex(inputs.client_secret_key_hex)));
  const assistant_key = hand.encodeBase64Url(hand.publicKeyOf(hex(inputs.assistant_secret_key_hex)));
  const requestMacInput = requestMacInputByHand(integration_id, rekey_id, current_keys.kid, client_key);
  const mac = hand.encodeBase64Url(hand.hmacSha256(hex(current_keys.confirm_hex), requestMacInput));
  const rotated = rotatedByHand(inputs, client_key, assistant_key);
  // The assistant's side comes to the same shared secret.
  expect(hand.x25519(hex(inputs.assistant_secret_key_hex), hand.publicKeyOf(hex(inputs.client_secret_key_hex)))).toEqual(rotated.shared);
  return {
    client_key,
    request_mac_input_hex: toHex(requestMacInput),
    request: { rekey_id, kid: current_keys.kid, client_key, mac },
    shared_secret_hex: toHex(rotated.shared),
    salt_input_hex: toHex(rotated.saltInput),
    salt_hex: toHex(rotated.salt),
    transcript_hex: toHex(rotated.transcript),
    hkdf_info_hex: Object.fromEntries(hand.KEY_LABELS.map((label) => [label, toHex(hand.lp(rotated.transcript, hand.utf8(label)))])),
    keys: keySetVector(rotated.keys),
    answer_mac_input_hex: toHex(rotated.answerMacInput),
    answer: { assistant_key, mac: rotated.answerMac },
  };
}
