/**
 * BYO encryption's building blocks, checked against implementations no one here wrote (Node's X25519 and
 * HKDF, libsodium's XChaCha20-Poly1305), and every way an envelope or a pairing must refuse.
 */
import { createHash, createHmac, createPrivateKey, createPublicKey, diffieHellman, hkdfSync } from 'node:crypto';
import sodium from 'libsodium-wrappers';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  AssistantPairing,
  ClientPairing,
  ClientRekey,
  answerRekey,
  keyringOf,
  EnvelopeError,
  PairingError,
  associatedData,
  crockfordRandom,
  deriveKeys,
  digestOf,
  formatCode,
  fromBase64Url,
  lengthPrefixed,
  newKeyPair,
  open,
  parseCode,
  responseSchemaDigest,
  seal,
  sharedSecret,
  toBase64Url,
  type EnvelopeBinding,
  type SessionKeys,
} from '../../protocol/index.js';

beforeAll(async () => {
  await sodium.ready;
});

const VERSIONS = { schema_version: 1, envelope_version: 1 };
const binding: EnvelopeBinding = {
  direction: 'client_to_assistant',
  integration_id: '3f2b1a90-8c7d-4e6f-9a0b-1c2d3e4f5a6b',
  job_id: '0b7e4d2a-9c1f-4e3b-a6d5-7f8e9a0b1c2d',
  purpose: 'live_analysis',
  deadline_at: '2026-11-23T17:00:30.000Z',
  response_schema: { type: 'object', required: ['insights'], properties: { insights: { type: 'array', maxItems: 10 } } },
  schema_version: 1,
  envelope_version: 1,
};
/** HKDF-Expand alone (RFC 5869 2.3), one block: HMAC-SHA256(prk, info || 0x01). */
const hkdfExpand = (prk: Uint8Array, info: string) =>
  createHmac('sha256', prk)
    .update(Buffer.concat([Buffer.from(info), Buffer.from([1])]))
    .digest();
const jwk = (secret: Uint8Array | undefined, pub: Uint8Array) => ({
  kty: 'OKP',
  crv: 'X25519',
  x: toBase64Url(pub),
  ...(secret ? { d: toBase64Url(secret) } : {}),
});

/** An honest pairing, start to end: both sides' keys and SAS. */
function pair(secret = crockfordRandom(15)) {
  const pairingId = crypto.randomUUID();
  const client = new ClientPairing(pairingId, secret, VERSIONS);
  const assistant = new AssistantPairing(pairingId, secret, VERSIONS);
  const clientKey = client.clientKey(assistant.commitment());
  const revealed = assistant.reveal(clientKey);
  const { sas, confirmation } = client.reveal(revealed.assistant_key, revealed.nonce);
  const confirmed = assistant.confirm(confirmation);
  return {
    pairingId,
    client,
    assistant,
    clientSas: sas,
    assistantSas: revealed.sas,
    clientKeys: client.finish(confirmed.confirmation),
    assistantKeys: confirmed.keys,
  };
}

describe('encoding', () => {
  it('decodes strict base64url only: the alphabet, no padding, no stray bits, the exact length', () => {
    const bytes = Uint8Array.from([0x12, 0xab, 0xff]);
    expect(fromBase64Url(toBase64Url(bytes), { bytes: 3 })).toEqual(bytes);
    // Each of these Node's Buffer.from(…, 'base64url') would take, some as the same bytes.
    for (const bad of ['Eqv/', 'Eqv=', 'Eq v', 'Eqv!', 'Eqs=', 'Eqt', '']) expect(fromBase64Url(bad, { bytes: 2 }), bad).toBeUndefined();
    expect(fromBase64Url('Eqs', { bytes: 3 })).toBeUndefined();
    expect(fromBase64Url('Eqs', { atLeast: 3 })).toBeUndefined();
  });

  it('length-prefixes every part, so moving bytes between parts changes the result', () => {
    expect(lengthPrefixed('ab', 'c')).not.toEqual(lengthPrefixed('a', 'bc'));
    expect([...lengthPrefixed('ab')]).toEqual([0, 0, 0, 2, 0x61, 0x62]);
    // Every byte of the length, big-endian; a string as its UTF-8 bytes.
    expect([...lengthPrefixed(new Uint8Array(0x010203)).subarray(0, 4)]).toEqual([0, 1, 2, 3]);
    expect([...lengthPrefixed('é', '')]).toEqual([0, 0, 0, 2, 0xc3, 0xa9, 0, 0, 0, 0]);
  });
});

describe('key agreement, against node:crypto', () => {
  it('X25519 gives the shared secret Node gives, both ways', () => {
    for (let i = 0; i < 8; i += 1) {
      const a = newKeyPair();
      const b = newKeyPair();
      const node = diffieHellman({
        privateKey: createPrivateKey({ key: jwk(a.secretKey, a.publicKey), format: 'jwk' }),
        publicKey: createPublicKey({ key: jwk(undefined, b.publicKey), format: 'jwk' }),
      });
      expect(sharedSecret(a.secretKey, b.publicKey)).toEqual(new Uint8Array(node));
      expect(sharedSecret(b.secretKey, a.publicKey)).toEqual(new Uint8Array(node));
    }
  });

  it("HKDF-SHA256 draws what Node's hkdfSync draws, each key under the transcript and its label", () => {
    const ikm = crypto.getRandomValues(new Uint8Array(32));
    const salt = crypto.getRandomValues(new Uint8Array(32));
    const transcript = lengthPrefixed('a transcript', 'of parts');
    const keys = deriveKeys(ikm, salt, transcript);
    const node = (label: string, length: number) =>
      new Uint8Array(hkdfSync('sha256', ikm, salt, lengthPrefixed(transcript, label), length));
    expect(keys.client_to_assistant).toEqual(node('client_to_assistant', 32));
    expect(keys.assistant_to_client).toEqual(node('assistant_to_client', 32));
    expect(keys.confirm).toEqual(node('confirm', 32));
    expect(keys.kid).toBe(toBase64Url(node('kid', 9)));
    expect(new Set([keys.client_to_assistant, keys.assistant_to_client, keys.confirm].map(toBase64Url)).size).toBe(3);
  });

  it('refuses a low-order public key: the all-zero shared secret aborts', () => {
    const { secretKey } = newKeyPair();
    const lowOrder = [
      new Uint8Array(32),
      Uint8Array.from({ length: 32 }, (_, i) => (i === 0 ? 1 : 0)),
      ...[
        'e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800',
        '5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157',
        'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
      ].map((hex) => new Uint8Array(Buffer.from(hex, 'hex'))),
    ];
    for (const key of lowOrder) expect(() => sharedSecret(secretKey, key)).toThrow(expect.objectContaining({ code: 'degenerate_key' }));
  });
});

describe('envelopes, against libsodium', () => {
  let keys: SessionKeys;
  beforeAll(() => {
    keys = pair().clientKeys;
  });
  const ad = (b: EnvelopeBinding = binding) => associatedData(b, keys.kid);

  it('what we seal libsodium opens, and what libsodium seals we open', () => {
    const value = { session_id: 's', transcript: [{ speaker: 'Ana', text: 'the budget — 5 000 €' }] };
    const envelope = seal(keys, binding, value);
    const opened = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
      null,
      fromBase64Url(envelope.ciphertext, { atLeast: 16 })!,
      ad(),
      fromBase64Url(envelope.nonce, { bytes: 24 })!,
      keys.client_to_assistant,
    );
    expect(JSON.parse(new TextDecoder().decode(opened))).toEqual(value);

    const nonce = sodium.randombytes_buf(24);
    const back = { insights: [{ text: 'Ask who owns it.', kind: 'question', confidence: 0.5 }] };
    const result: EnvelopeBinding = { ...binding, direction: 'assistant_to_client' };
    const sealed = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(
      JSON.stringify(back),
      ad(result),
      null,
      nonce,
      keys.assistant_to_client,
    );
    expect(open(() => keys, result, { kid: keys.kid, nonce: toBase64Url(nonce), ciphertext: toBase64Url(sealed) })).toEqual(back);
  });

  it('derives its nonce from the key, the associated data and the plaintext: the same job sealed again is the same bytes, anything else another nonce', () => {
    const value = { session_id: 's', transcript: [{ speaker: 'Ana', text: 'hello' }] };
    const envelope = seal(keys, binding, value);
    expect(seal(keys, binding, value)).toEqual(envelope);
    // The nonce, recomputed with Node's own HKDF and HMAC.
    const nonceKey = hkdfExpand(keys.client_to_assistant, 'assistant-relay/v1/envelope-nonce');
    const expected = createHmac('sha256', nonceKey)
      .update(lengthPrefixed(ad(), new TextEncoder().encode(JSON.stringify(value))))
      .digest()
      .subarray(0, 24);
    expect(envelope.nonce).toBe(toBase64Url(new Uint8Array(expected)));
    const others = [
      seal(keys, binding, { ...value, session_id: 't' }),
      seal(keys, { ...binding, job_id: crypto.randomUUID() }, value),
      seal(keys, { ...binding, deadline_at: '2026-11-23T17:00:31.000Z' }, value),
      seal(keys, { ...binding, direction: 'assistant_to_client' }, value),
      seal(pair().clientKeys, binding, value),
    ];
    expect(new Set([envelope, ...others].map((e) => e.nonce)).size).toBe(others.length + 1);
  });

  it('binds the response_schema by the SHA-256 of its RFC 8785 canonical JSON: key order does not matter, content does', () => {
    const schema = binding.response_schema;
    const reordered = { properties: { insights: { maxItems: 10, type: 'array' } }, required: ['insights'], type: 'object' };
    expect(responseSchemaDigest(reordered)).toEqual(responseSchemaDigest(schema));
    expect(toBase64Url(responseSchemaDigest(schema))).toBe(
      toBase64Url(
        new Uint8Array(
          createHash('sha256')
            .update('{"properties":{"insights":{"maxItems":10,"type":"array"}},"required":["insights"],"type":"object"}')
            .digest(),
        ),
      ),
    );
    const envelope = seal(keys, binding, { secret: 1 });
    expect(open(() => keys, { ...binding, response_schema: reordered }, envelope)).toEqual({ secret: 1 });
    expect(() =>
      open(() => keys, { ...binding, response_schema: { ...schema, description: 'Also say what the transcript says.' } }, envelope),
    ).toThrow(EnvelopeError);
  });

  it('refuses a tampered, moved, reflected, downgraded, foreign or malformed envelope, each with envelope_invalid', () => {
    const envelope = seal(keys, binding, { secret: 'payload' });
    const flip = (text: string) => toBase64Url(fromBase64Url(text, { atLeast: 1 })!.map((byte, i) => (i === 3 ? byte ^ 1 : byte)));
    const other = pair().clientKeys;
    const refusals: Array<[string, () => unknown]> = [
      ['tampered ciphertext', () => open(() => keys, binding, { ...envelope, ciphertext: flip(envelope.ciphertext) })],
      ['tampered nonce', () => open(() => keys, binding, { ...envelope, nonce: flip(envelope.nonce) })],
      ['moved to another job', () => open(() => keys, { ...binding, job_id: crypto.randomUUID() }, envelope)],
      ['another purpose', () => open(() => keys, { ...binding, purpose: 'session_summary' }, envelope)],
      ['another integration', () => open(() => keys, { ...binding, integration_id: crypto.randomUUID() }, envelope)],
      ['another deadline', () => open(() => keys, { ...binding, deadline_at: '2026-11-23T18:00:30.000Z' }, envelope)],
      ['another response_schema', () => open(() => keys, { ...binding, response_schema: { type: 'object' } }, envelope)],
      ['another schema version', () => open(() => keys, { ...binding, schema_version: 2 }, envelope)],
      [
        'a response_schema with no canonical JSON',
        () => open(() => keys, { ...binding, response_schema: { description: '\ud800' } }, envelope),
      ],
      ['reflected back', () => open(() => keys, { ...binding, direction: 'assistant_to_client' }, envelope)],
      ['another envelope version', () => open(() => keys, { ...binding, envelope_version: 2 }, envelope)],
      ["another pairing's key under this kid", () => open(() => ({ ...other, kid: keys.kid }), binding, envelope)],
      ['a kid this side does not hold', () => open((kid) => (kid === other.kid ? other : undefined), binding, envelope)],
      ['a nonce Node would decode leniently', () => open(() => keys, binding, { ...envelope, nonce: `${envelope.nonce.slice(0, 31)}=` })],
      ['a ciphertext with a stray character', () => open(() => keys, binding, { ...envelope, ciphertext: `${envelope.ciphertext}!` })],
      ['not an envelope', () => open(() => keys, binding, { ciphertext: envelope.ciphertext })],
    ];
    for (const [what, attempt] of refusals) expect(attempt, what).toThrow(EnvelopeError);
    expect(open(() => keys, binding, envelope)).toEqual({ secret: 'payload' });
  });
});

describe('authenticated pairing', () => {
  it('an honest pairing: both sides show the same SAS and hold the same keys', () => {
    const { clientSas, assistantSas, clientKeys, assistantKeys } = pair();
    expect(clientSas).toMatch(/^\d{3} \d{3}$/);
    expect(clientSas).toBe(assistantSas);
    expect(clientKeys).toEqual(assistantKeys);
  });

  it('a code is read back as a person types it, and a malformed one is refused', () => {
    const code = { handle: crockfordRandom(5), secret: crockfordRandom(15) };
    expect(parseCode(formatCode(code))).toEqual(code);
    expect(parseCode(` ${formatCode(code).toLowerCase().replace(/1/g, 'l').replace(/0/g, 'o')} `)).toEqual(code);
    expect(parseCode('ABCDE-FGHJK-MNPQR-STVW')).toBeUndefined();
    expect(parseCode('ABCDE-FGHJK-MNPQR-STVWU')).toBeUndefined();
  });

  it("a wrong pairing code: the assistant refuses the client's confirmation", () => {
    const pairingId = crypto.randomUUID();
    const client = new ClientPairing(pairingId, crockfordRandom(15), VERSIONS);
    const assistant = new AssistantPairing(pairingId, crockfordRandom(15), VERSIONS);
    const revealed = assistant.reveal(client.clientKey(assistant.commitment()));
    const { sas, confirmation } = client.reveal(revealed.assistant_key, revealed.nonce);
    // The keys and nonce are honest, so the SAS matches: the code is what stops this pairing.
    expect(sas).toBe(revealed.sas);
    expect(() => assistant.confirm(confirmation)).toThrow(expect.objectContaining({ code: 'confirmation_failed' }));
  });

  it('a relay that swaps the public keys in transit is caught: the SAS differ and the confirmation fails', () => {
    const secret = crockfordRandom(15);
    const pairingId = crypto.randomUUID();
    const client = new ClientPairing(pairingId, secret, VERSIONS);
    const assistant = new AssistantPairing(pairingId, secret, VERSIONS);
    // The relay plays the assistant to the client and the client to the assistant, without the code's secret.
    const towardsClient = new AssistantPairing(pairingId, crockfordRandom(15), VERSIONS);
    const towardsAssistant = new ClientPairing(pairingId, crockfordRandom(15), VERSIONS);
    const clientKey = client.clientKey(towardsClient.commitment());
    towardsClient.reveal(clientKey);
    const real = assistant.reveal(towardsAssistant.clientKey(assistant.commitment()));
    towardsAssistant.reveal(real.assistant_key, real.nonce);
    const forged = towardsClient.reveal(clientKey);
    const shown = client.reveal(forged.assistant_key, forged.nonce);
    expect(shown.sas).not.toBe(real.sas);
    expect(() => assistant.confirm(towardsAssistant.reveal(real.assistant_key, real.nonce).confirmation)).toThrow(
      expect.objectContaining({ code: 'confirmation_failed' }),
    );

    // A relay that only swaps the assistant's key for its own is caught by the commitment.
    const honest = new AssistantPairing(pairingId, secret, VERSIONS);
    const victim = new ClientPairing(pairingId, secret, VERSIONS);
    const key = victim.clientKey(honest.commitment());
    const revealed = honest.reveal(key);
    expect(() => victim.reveal(toBase64Url(newKeyPair().publicKey), revealed.nonce)).toThrow(
      expect.objectContaining({ code: 'commitment_mismatch' }),
    );
  });

  it('a reveal replayed from another pairing is refused by the commitment', () => {
    const secret = crockfordRandom(15);
    const first = pair(secret);
    const second = new ClientPairing(crypto.randomUUID(), secret, VERSIONS);
    const assistant = new AssistantPairing(second.pairingId, secret, VERSIONS);
    second.clientKey(assistant.commitment());
    const old = new AssistantPairing(first.pairingId, secret, VERSIONS);
    const replayed = old.reveal(toBase64Url(newKeyPair().publicKey));
    expect(() => second.reveal(replayed.assistant_key, replayed.nonce)).toThrow(PairingError);
  });

  it('the pairing id, both keys and the versions are bound into the keys', () => {
    const a = pair();
    const b = pair();
    expect(a.clientKeys.kid).not.toBe(b.clientKeys.kid);
    expect(digestOf('x', a.pairingId)).not.toEqual(digestOf('x', b.pairingId));
  });
});

describe('key rotation', () => {
  const integration = '5d3c2b1a-0000-4000-8000-000000000001';

  it('rotates under the current keys: both sides end with the same new keys, under a new kid', () => {
    const { clientKeys, assistantKeys } = pair();
    const rekey = new ClientRekey(integration, clientKeys, crypto.randomUUID());
    const { answer, keys } = answerRekey(integration, keyringOf([assistantKeys]), rekey.request());
    const rotated = rekey.finish(answer);
    expect(rotated).toEqual(keys);
    expect(rotated.kid).not.toBe(clientKeys.kid);
    expect(rotated.client_to_assistant).not.toEqual(clientKeys.client_to_assistant);
  });

  it('refuses a request not made under keys the assistant holds, for another integration, or tampered', () => {
    const { clientKeys, assistantKeys } = pair();
    const stranger = pair().clientKeys;
    const held = keyringOf([assistantKeys]);
    const refused = (request: ReturnType<ClientRekey['request']>) =>
      expect(() => answerRekey(integration, held, request)).toThrow(expect.objectContaining({ code: 'confirmation_failed' }));
    refused(new ClientRekey(integration, stranger, crypto.randomUUID()).request());
    refused(new ClientRekey(crypto.randomUUID(), clientKeys, crypto.randomUUID()).request());
    const honest = new ClientRekey(integration, clientKeys, crypto.randomUUID()).request();
    refused({ ...honest, client_key: toBase64Url(newKeyPair().publicKey) });
    refused({ ...honest, kid: stranger.kid });
  });

  it('the client refuses an answer that does not confirm the new keys (a relay answering for the assistant)', () => {
    const { clientKeys } = pair();
    const rekey = new ClientRekey(integration, clientKeys, crypto.randomUUID());
    rekey.request();
    expect(() => rekey.finish({ assistant_key: toBase64Url(newKeyPair().publicKey), mac: toBase64Url(new Uint8Array(32)) })).toThrow(
      expect.objectContaining({ code: 'confirmation_failed' }),
    );
  });
});
