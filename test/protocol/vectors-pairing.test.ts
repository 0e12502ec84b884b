/**
 * vectors/pairing.json holds: the pairing code read back, and a whole pairing (commitment, SAS, shared
 * secret, salt, transcript, HKDF's info per label, the keys, both confirmations), each computed by our
 * pairing sides and again by hand; and our client pairs with the vector's assistant, our assistant with
 * its client.
 */
import { describe, expect, it } from 'vitest';
import {
  AssistantPairing,
  ClientPairing,
  PairingError,
  commitmentOf,
  lengthPrefixed,
  pairingSalt,
  pairingTranscript,
  parseCode,
  sharedSecret,
} from '../../protocol/index.js';
import * as hand from '../support/by-hand.js';
import { keyPairOf, pairBothSides } from '../support/pairing-sides.js';
import {
  casesOf,
  expectOurs,
  flippedBase64Url,
  hex,
  keySetOf,
  keySetVector,
  toHex,
  vectorFile,
  type DerivationValues,
  type VectorCase,
} from '../support/vector-files.js';

interface PairingInputs {
  readonly pairing_id: string;
  readonly pairing_code: string;
  readonly client_secret_key_hex: string;
  readonly assistant_secret_key_hex: string;
  readonly reveal_nonce_hex: string;
  readonly schema_version: number;
  readonly envelope_version: number;
}

interface PairingValues extends DerivationValues {
  readonly handle: string;
  readonly code_secret: string;
  readonly client_key: string;
  readonly assistant_key: string;
  readonly nonce: string;
  readonly commitment_input_hex: string;
  readonly commitment: string;
  readonly sas_input_hex: string;
  readonly sas: string;
  readonly confirmation_input_hex: { readonly client: string; readonly assistant: string };
  readonly client_confirmation: string;
  readonly assistant_confirmation: string;
}

type CodeValues = { readonly valid: false } | { readonly valid: true; readonly handle: string; readonly secret: string };
type PairingCase = VectorCase<'code', { readonly text: string }, CodeValues> | VectorCase<'pairing', PairingInputs, PairingValues>;

const pairing = vectorFile<PairingCase>('pairing.json');

const versionsOf = (inputs: PairingInputs) => ({ schema_version: inputs.schema_version, envelope_version: inputs.envelope_version });

/** Our two sides paired with each other, and the bytes each hash and MAC took, as our code puts them together. */
function ourPairing(inputs: PairingInputs): PairingValues {
  const code = parseCode(inputs.pairing_code)!;
  const [clientPair, assistantPair] = [keyPairOf(inputs.client_secret_key_hex), keyPairOf(inputs.assistant_secret_key_hex)];
  const revealNonce = hex(inputs.reveal_nonce_hex);
  const { keys, ...messages } = pairBothSides({
    pairing_id: inputs.pairing_id,
    secret: code.secret,
    versions: versionsOf(inputs),
    client: clientPair,
    assistant: assistantPair,
    revealNonce,
  });
  const [clientKey, assistantKey] = [clientPair.publicKey, assistantPair.publicKey];
  const transcript = pairingTranscript(
    inputs.pairing_id,
    clientKey,
    assistantKey,
    commitmentOf(inputs.pairing_id, assistantKey, revealNonce),
    versionsOf(inputs),
  );
  return {
    handle: code.handle,
    code_secret: code.secret,
    client_key: messages.client_key,
    assistant_key: messages.assistant_key,
    nonce: messages.nonce,
    commitment_input_hex: toHex(lengthPrefixed('assistant-relay/v1/commit', inputs.pairing_id, assistantKey, revealNonce)),
    commitment: messages.commitment,
    sas_input_hex: toHex(lengthPrefixed('assistant-relay/v1/sas', inputs.pairing_id, clientKey, assistantKey, revealNonce)),
    sas: messages.sas,
    shared_secret_hex: toHex(sharedSecret(clientPair.secretKey, assistantKey)),
    salt_input_hex: toHex(lengthPrefixed('assistant-relay/v1/pairing-code', code.secret)),
    salt_hex: toHex(pairingSalt(code.secret)),
    transcript_hex: toHex(transcript),
    hkdf_info_hex: Object.fromEntries(hand.KEY_LABELS.map((label) => [label, toHex(lengthPrefixed(transcript, label))])),
    keys: keySetVector(keys),
    confirmation_input_hex: {
      client: toHex(lengthPrefixed('assistant-relay/v1/confirm', 'client')),
      assistant: toHex(lengthPrefixed('assistant-relay/v1/confirm', 'assistant')),
    },
    client_confirmation: messages.client_confirmation,
    assistant_confirmation: messages.assistant_confirmation,
  };
}

/** The same from PROTOCOL.md 7.4–7.7 and 7.15, with libsodium and node:crypto. */
function pairingByHand(inputs: PairingInputs): PairingValues {
  const { utf8, lp, sha256, hmacSha256, encodeBase64Url } = hand;
  const code = hand.readCode(inputs.pairing_code)!;
  const [clientSecret, assistantSecret] = [hex(inputs.client_secret_key_hex), hex(inputs.assistant_secret_key_hex)];
  const [clientKey, assistantKey] = [hand.publicKeyOf(clientSecret), hand.publicKeyOf(assistantSecret)];
  const nonce = hex(inputs.reveal_nonce_hex);
  const id = utf8(inputs.pairing_id);
  const commitmentInput = lp(utf8('assistant-relay/v1/commit'), id, assistantKey, nonce);
  const sasInput = lp(utf8('assistant-relay/v1/sas'), id, clientKey, assistantKey, nonce);
  const shared = hand.x25519(clientSecret, assistantKey);
  expect(hand.x25519(assistantSecret, clientKey)).toEqual(shared);
  const saltInput = lp(utf8('assistant-relay/v1/pairing-code'), utf8(code.secret));
  const transcript = lp(
    utf8('assistant-relay/v1/pairing'),
    id,
    clientKey,
    assistantKey,
    sha256(commitmentInput),
    utf8(`schema_version=${inputs.schema_version}`),
    utf8(`envelope_version=${inputs.envelope_version}`),
  );
  const keys = hand.keysOf(shared, sha256(saltInput), transcript);
  const confirmationInput = (role: string) => lp(utf8('assistant-relay/v1/confirm'), utf8(role));
  return {
    handle: code.handle,
    code_secret: code.secret,
    client_key: encodeBase64Url(clientKey),
    assistant_key: encodeBase64Url(assistantKey),
    nonce: encodeBase64Url(nonce),
    commitment_input_hex: toHex(commitmentInput),
    commitment: encodeBase64Url(sha256(commitmentInput)),
    sas_input_hex: toHex(sasInput),
    sas: hand.sasOf(sha256(sasInput)),
    shared_secret_hex: toHex(shared),
    salt_input_hex: toHex(saltInput),
    salt_hex: toHex(sha256(saltInput)),
    transcript_hex: toHex(transcript),
    hkdf_info_hex: Object.fromEntries(hand.KEY_LABELS.map((label) => [label, toHex(lp(transcript, utf8(label)))])),
    keys: keySetVector(keys),
    confirmation_input_hex: { client: toHex(confirmationInput('client')), assistant: toHex(confirmationInput('assistant')) },
    client_confirmation: encodeBase64Url(hmacSha256(keys.confirm, confirmationInput('client'))),
    assistant_confirmation: encodeBase64Url(hmacSha256(keys.confirm, confirmationInput('assistant'))),
  };
}

describe('vectors/pairing.json', () => {
  it.each(casesOf(pairing, 'code'))('code: %s', (_name, vector) => {
    const code = parseCode(vector.inputs.text);
    expectOurs(vector, code === undefined ? { valid: false } : { valid: true, ...code });
    const read = hand.readCode(vector.inputs.text);
    expect(read === undefined ? { valid: false } : { valid: true, ...read }).toEqual(vector.expected);
  });

  it.each(casesOf(pairing, 'pairing'))('pairing: %s', (_name, vector) => {
    expectOurs(vector, ourPairing(vector.inputs));
    expect(pairingByHand(vector.inputs)).toEqual(vector.expected);
  });

  it.each(casesOf(pairing, 'pairing'))(
    "our client pairs with the vector's assistant, our assistant with its client: %s",
    (_name, vector) => {
      const { inputs, expected } = vector;
      const secret = hand.readCode(inputs.pairing_code)!.secret;
      const client = new ClientPairing(inputs.pairing_id, secret, versionsOf(inputs), { keyPair: keyPairOf(inputs.client_secret_key_hex) });
      expect(client.clientKey(expected.commitment)).toBe(expected.client_key);
      expect(client.reveal(expected.assistant_key, expected.nonce)).toEqual({
        sas: expected.sas,
        confirmation: expected.client_confirmation,
      });
      expect(client.finish(expected.assistant_confirmation)).toEqual(keySetOf(expected.keys));

      const assistant = new AssistantPairing(inputs.pairing_id, secret, versionsOf(inputs), {
        keyPair: keyPairOf(inputs.assistant_secret_key_hex),
        revealNonce: hex(inputs.reveal_nonce_hex),
      });
      expect(assistant.commitment()).toBe(expected.commitment);
      expect(assistant.reveal(expected.client_key)).toEqual({
        assistant_key: expected.assistant_key,
        nonce: expected.nonce,
        sas: expected.sas,
      });
      // A confirmation one bit off is refused.
      expect(() => assistant.confirm(flippedBase64Url(expected.client_confirmation))).toThrow(PairingError);
      expect(assistant.confirm(expected.client_confirmation).confirmation).toBe(expected.assistant_confirmation);
    },
  );
});
