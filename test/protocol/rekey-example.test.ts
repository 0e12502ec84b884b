/**
 * PROTOCOL.md's rekey example (section 7, after the worked example) is true: read from the document
 * itself, every value is recomputed from its inputs by our code and by hand (libsodium's X25519,
 * node:crypto's HMAC and HKDF); it rotates the worked example's keys, and it is vectors/rekey.json's first
 * case, so the document, the vectors and the code cannot drift apart.
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { ourRekey, rekeyByHand, type RekeyInputs, type RekeyValues } from '../support/rekey-vectors.js';

interface Example {
  readonly inputs: RekeyInputs;
  readonly expected: RekeyValues;
}

const text = readFileSync(new URL('../../PROTOCOL.md', import.meta.url), 'utf8');
const block = (tag: string) => JSON.parse(new RegExp('```json ' + tag + '\\n([\\s\\S]*?)\\n```').exec(text)![1]!) as unknown;
const example = block('rekey-example') as Example;

it('every value of the rekey example follows from its inputs, by our code and by hand', () => {
  expect(ourRekey(example.inputs)).toEqual(example.expected);
  expect(rekeyByHand(example.inputs)).toEqual(example.expected);
});

it("rotates the worked example's keys, for its integration", () => {
  const worked = block('worked-example') as {
    readonly inputs: { readonly binding: { readonly integration_id: string } };
    readonly keys: Record<string, string>;
  };
  const current = example.inputs.current_keys;
  expect(current).toEqual({
    kid: worked.keys.kid,
    client_to_assistant_hex: worked.keys.client_to_assistant,
    assistant_to_client_hex: worked.keys.assistant_to_client,
    confirm_hex: worked.keys.confirm,
  });
  expect(example.inputs.integration_id).toBe(worked.inputs.binding.integration_id);
});

it("is vectors/rekey.json's first case", () => {
  // Read, not through vectorFile: this test never writes the vectors, even when they are updated.
  const vectors = JSON.parse(readFileSync(new URL('../../vectors/rekey.json', import.meta.url), 'utf8')) as { cases: Example[] };
  expect({ inputs: vectors.cases[0]!.inputs, expected: vectors.cases[0]!.expected }).toEqual(example);
});
