/**
 * vectors/rekey.json holds: key rotations (the request and its MAC, the salt, the transcript, HKDF's info,
 * the new keys, the answer and its MAC) computed by our two sides and again by hand, our client against
 * the vector's assistant and our assistant against its client; and requests and answers that must be
 * refused, by our code and by hand.
 */
import { describe, expect, it } from 'vitest';
import { ClientRekey, PairingError, answerRekey, keyringOf, type RekeyAnswer, type RekeyRequest } from '../../protocol/index.js';
import * as hand from '../support/by-hand.js';
import {
  ourRekey,
  rekeyByHand,
  requestMacInputByHand,
  rotatedByHand,
  type RekeyInputs,
  type RekeyValues,
} from '../support/rekey-vectors.js';
import { keyPairOf } from '../support/pairing-sides.js';
import {
  casesOf,
  expectOurs,
  hex,
  keySetOf,
  keySetVector,
  refusedWith,
  vectorFile,
  type KeySetVector,
  type VectorCase,
} from '../support/vector-files.js';

interface RequestRefused {
  /** The assistant's own integration id. */
  readonly integration_id: string;
  readonly held_keys: readonly KeySetVector[];
  readonly request: RekeyRequest;
}

type AnswerRefused = Omit<RekeyInputs, 'assistant_secret_key_hex'> & { readonly answer: RekeyAnswer };

type RekeyCase =
  | VectorCase<'rekey', RekeyInputs, RekeyValues>
  | VectorCase<'request_refused', RequestRefused, { readonly refused: boolean }>
  | VectorCase<'answer_refused', AnswerRefused, { readonly refused: boolean }>;

const rekeys = vectorFile<RekeyCase>('rekey.json');

describe('vectors/rekey.json', () => {
  it.each(casesOf(rekeys, 'rekey'))('%s', (_name, vector) => {
    expectOurs(vector, ourRekey(vector.inputs));
    expect(rekeyByHand(vector.inputs)).toEqual(vector.expected);
  });

  it.each(casesOf(rekeys, 'rekey'))(
    "our client rotates with the vector's assistant, our assistant with its client: %s",
    (_name, vector) => {
      const { inputs, expected } = vector;
      const current = keySetOf(inputs.current_keys);
      const client = new ClientRekey(inputs.integration_id, current, inputs.rekey_id, { keyPair: keyPairOf(inputs.client_secret_key_hex) });
      expect(client.request()).toEqual(expected.request);
      expect(keySetVector(client.finish(expected.answer))).toEqual(expected.keys);
      const answered = answerRekey(
        inputs.integration_id,
        keyringOf([current]),
        expected.request,
        keyPairOf(inputs.assistant_secret_key_hex),
      );
      expect({ answer: answered.answer, keys: keySetVector(answered.keys) }).toEqual({ answer: expected.answer, keys: expected.keys });
    },
  );

  it.each(casesOf(rekeys, 'request_refused'))('the assistant refuses: %s', (_name, vector) => {
    const { integration_id, held_keys, request } = vector.inputs;
    const keyring = keyringOf(held_keys.map(keySetOf));
    expectOurs(vector, {
      refused: refusedWith(PairingError, () => answerRekey(integration_id, keyring, request, keyPairOf('11'.repeat(32)))),
    });
    const held = held_keys.find((keys) => keys.kid === request.kid);
    const macInput = requestMacInputByHand(integration_id, request.rekey_id, request.kid, request.client_key);
    const mac = held === undefined ? undefined : hand.encodeBase64Url(hand.hmacSha256(hex(held.confirm_hex), macInput));
    expect({ refused: mac !== request.mac }).toEqual(vector.expected);
    expect(vector.expected.refused).toBe(true);
  });

  it.each(casesOf(rekeys, 'answer_refused'))('the client refuses: %s', (_name, vector) => {
    const { inputs } = vector;
    const client = new ClientRekey(inputs.integration_id, keySetOf(inputs.current_keys), inputs.rekey_id, {
      keyPair: keyPairOf(inputs.client_secret_key_hex),
    });
    const { client_key } = client.request();
    expectOurs(vector, { refused: refusedWith(PairingError, () => client.finish(inputs.answer)) });
    const rotated = rotatedByHand(inputs, client_key, inputs.answer.assistant_key);
    expect({ refused: rotated.answerMac !== inputs.answer.mac }).toEqual(vector.expected);
    expect(vector.expected.refused).toBe(true);
  });
});
