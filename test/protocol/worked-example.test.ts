/**
 * PROTOCOL.md's worked example (section 7) is true: read from the document itself, every value is
 * recomputed from its inputs (the response_schema's digest and the synthetic nonce with node:crypto and
 * the canonicalize package besides our own code), and the envelope opens with libsodium (an
 * implementation no one here wrote) under the listed key and associated data.
 */
import { createHash, createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import canonicalize from 'canonicalize';
import sodium from 'libsodium-wrappers';
import { beforeAll, expect, it } from 'vitest';
import { associatedData, fromBase64Url, lengthPrefixed, parseCode, seal, toBase64Url, type EnvelopeBinding } from '../../protocol/index.js';
import { keyPairOf, pairBothSides } from '../support/pairing-sides.js';

interface Example {
  readonly inputs: {
    readonly pairing_id: string;
    readonly pairing_code: string;
    readonly client_secret_key: string;
    readonly assistant_secret_key: string;
    readonly reveal_nonce: string;
    readonly schema_version: number;
    readonly envelope_version: number;
    readonly binding: EnvelopeBinding;
    readonly plaintext: unknown;
  };
  readonly pairing: Record<string, string>;
  readonly keys: Record<string, string>;
  readonly response_schema_digest: string;
  readonly nonce_key: string;
  readonly associated_data: string;
  readonly envelope: { readonly kid: string; readonly nonce: string; readonly ciphertext: string };
}

const text = readFileSync(new URL('../../PROTOCOL.md', import.meta.url), 'utf8');
const example = JSON.parse(/```json worked-example\n([\s\S]*?)\n```/.exec(text)![1]!) as Example;
const hex = (value: string) => new Uint8Array(Buffer.from(value, 'hex'));
const toHex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

beforeAll(async () => {
  await sodium.ready;
});

it('every value of the worked example follows from its inputs', () => {
  const { inputs } = example;
  const code = parseCode(inputs.pairing_code)!;
  const versions = { schema_version: inputs.schema_version, envelope_version: inputs.envelope_version };
  const {
    nonce: _nonce,
    keys,
    ...pairing
  } = pairBothSides({
    pairing_id: inputs.pairing_id,
    secret: code.secret,
    versions,
    client: keyPairOf(inputs.client_secret_key),
    assistant: keyPairOf(inputs.assistant_secret_key),
    revealNonce: fromBase64Url(inputs.reveal_nonce, { bytes: 32 })!,
  });
  expect(pairing).toEqual(example.pairing);
  expect({
    kid: keys.kid,
    client_to_assistant: toHex(keys.client_to_assistant),
    assistant_to_client: toHex(keys.assistant_to_client),
    confirm: toHex(keys.confirm),
  }).toEqual(example.keys);
  expect(createHash('sha256').update(canonicalize(inputs.binding.response_schema)!).digest('hex')).toBe(example.response_schema_digest);
  const ad = associatedData(inputs.binding, keys.kid);
  expect(toHex(ad)).toBe(example.associated_data);
  // HKDF-Expand (RFC 5869 2.3) of one block, then HMAC-SHA256 of LP(associated data, plaintext), first 24 bytes.
  const sealing = hex(example.keys[inputs.binding.direction]!);
  const nonceKey = createHmac('sha256', sealing)
    .update(Buffer.concat([Buffer.from('assistant-relay/v1/envelope-nonce'), Buffer.from([1])]))
    .digest();
  expect(nonceKey.toString('hex')).toBe(example.nonce_key);
  const nonce = createHmac('sha256', nonceKey)
    .update(lengthPrefixed(ad, new TextEncoder().encode(JSON.stringify(inputs.plaintext))))
    .digest()
    .subarray(0, 24);
  expect(example.envelope.nonce).toBe(toBase64Url(new Uint8Array(nonce)));
  expect(seal(keys, inputs.binding, inputs.plaintext)).toEqual(example.envelope);
});

it('libsodium opens the example envelope with the listed key and associated data', () => {
  const opened = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
    null,
    fromBase64Url(example.envelope.ciphertext, { atLeast: 16 })!,
    hex(example.associated_data),
    fromBase64Url(example.envelope.nonce, { bytes: 24 })!,
    hex(example.keys.client_to_assistant!),
  );
  expect(JSON.parse(new TextDecoder().decode(opened))).toEqual(example.inputs.plaintext);
});
