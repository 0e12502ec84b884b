/**
 * vectors/encoding.json and vectors/tokens.json hold: LP (the one way parts are put together for every
 * hash, MAC and key derivation), strict base64url, and token digests, each computed by our code and again
 * by hand (libsodium's base64url decoder, node:crypto's SHA-256 of the token's UTF-8).
 */
import { describe, expect, it } from 'vitest';
import { fromBase64Url, lengthPrefixed, matchesDigest, toBase64Url, tokenDigest } from '../../protocol/index.js';
import * as hand from '../support/by-hand.js';
import { expectOurs, hex, toHex, vectorFile, type VectorCase } from '../support/vector-files.js';

type Part = { readonly utf8: string } | { readonly hex: string };
type EncodingCase =
  | VectorCase<'length_prefixed', { readonly parts: readonly Part[] }, { readonly bytes_hex: string }>
  | VectorCase<'base64url', { readonly text: string; readonly bytes: number }, { readonly valid: boolean; readonly bytes_hex?: string }>;
type TokenCase = VectorCase<'token_digest', { readonly token: string }, { readonly digest_hex: string }>;

const encoding = vectorFile<EncodingCase>('encoding.json');
const tokens = vectorFile<TokenCase>('tokens.json');

const ours = (part: Part) => ('utf8' in part ? part.utf8 : hex(part.hex));
const byHand = (part: Part) => ('utf8' in part ? hand.utf8(part.utf8) : hex(part.hex));

describe('vectors/encoding.json', () => {
  it.each(encoding.cases.map((vector) => [vector.name, vector] as const))('%s', (_name, vector) => {
    switch (vector.step) {
      case 'length_prefixed': {
        expectOurs(vector, { bytes_hex: toHex(lengthPrefixed(...vector.inputs.parts.map(ours))) });
        expect(toHex(hand.lp(...vector.inputs.parts.map(byHand)))).toBe(vector.expected.bytes_hex);
        return;
      }
      case 'base64url': {
        const { text, bytes } = vector.inputs;
        const decoded = fromBase64Url(text, { bytes });
        expectOurs(vector, decoded === undefined ? { valid: false } : { valid: true, bytes_hex: toHex(decoded) });
        const decodedByHand = hand.decodeBase64Url(text, bytes);
        expect(decodedByHand === undefined ? { valid: false } : { valid: true, bytes_hex: toHex(decodedByHand) }).toEqual(vector.expected);
        // A valid text is the one text of its bytes, both ways.
        if (decoded !== undefined) expect([toBase64Url(decoded), hand.encodeBase64Url(decoded)]).toEqual([text, text]);
        return;
      }
    }
  });

  it('holds base64url a strict decoder takes and some it refuses', () => {
    const valid = encoding.cases.filter((vector) => vector.step === 'base64url').map((vector) => vector.expected.valid);
    expect(new Set(valid)).toEqual(new Set([true, false]));
  });
});

describe('vectors/tokens.json', () => {
  it.each(tokens.cases.map((vector) => [vector.name, vector] as const))('%s', (_name, vector) => {
    expectOurs(vector, { digest_hex: tokenDigest(vector.inputs.token) });
    expect(toHex(hand.sha256(hand.utf8(vector.inputs.token)))).toBe(vector.expected.digest_hex);
    expect(matchesDigest(vector.inputs.token, vector.expected.digest_hex)).toBe(true);
  });
});
