/**
 * vectors/envelope.json holds: envelopes both ways (the schema digest, associated data, nonce key, nonce
 * and ciphertext) computed by our `seal` and again by hand with libsodium, each opening with the other;
 * and envelopes that must not open (a bound field changed, the direction reflected, the kid relabelled,
 * the nonce or the tag tampered with), refused by our `open` and by libsodium.
 */
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import {
  EnvelopeError,
  associatedData,
  keyringOf,
  nonceKeyOf,
  open,
  responseSchemaDigest,
  seal,
  type ByoEnvelope,
  type EnvelopeBinding,
} from '../../protocol/index.js';
import * as hand from '../support/by-hand.js';
import {
  casesOf,
  expectOurs,
  hex,
  keySetOf,
  refusedWith,
  toHex,
  vectorFile,
  type KeySetVector,
  type VectorCase,
} from '../support/vector-files.js';

interface Sealed {
  readonly keys: KeySetVector;
  readonly binding: EnvelopeBinding;
  /** The exact JSON text sealed (as `JSON.stringify` writes it): its UTF-8 is the plaintext. */
  readonly plaintext_json: string;
}

interface EnvelopeValues {
  readonly response_schema_jcs: string;
  readonly response_schema_digest_hex: string;
  readonly associated_data_hex: string;
  readonly nonce_key_hex: string;
  readonly envelope: ByoEnvelope;
}

/** How a relay changed the sealed envelope: another kid, or one bit of a byte (a negative index counts from the end). */
type Tamper = { readonly kid: string } | { readonly flip: 'nonce' | 'ciphertext'; readonly byte: number };

interface Refused extends Sealed {
  readonly tamper?: Tamper;
  /** The keys the opener holds and the binding it builds from what it knows. */
  readonly opener: { readonly keys: readonly KeySetVector[]; readonly binding: EnvelopeBinding };
}

interface RefusedValues {
  readonly envelope: ByoEnvelope;
  /** The opener's, under the envelope's kid. */
  readonly associated_data_hex: string;
  readonly opens: boolean;
}

type EnvelopeCase = VectorCase<'envelope', Sealed, EnvelopeValues> | VectorCase<'envelope_refused', Refused, RefusedValues>;

const envelopes = vectorFile<EnvelopeCase>('envelope.json');

function ourEnvelope({ keys, binding, plaintext_json }: Sealed): EnvelopeValues {
  const sealing = keySetOf(keys);
  return {
    response_schema_jcs: canonicalize(binding.response_schema)!,
    response_schema_digest_hex: toHex(responseSchemaDigest(binding.response_schema)),
    associated_data_hex: toHex(associatedData(binding, keys.kid)),
    nonce_key_hex: toHex(nonceKeyOf(sealing[binding.direction])),
    envelope: seal(sealing, binding, JSON.parse(plaintext_json)),
  };
}

/** 7.3: every part as 7.15 says, the versions in decimal, `true`, the schema's 32-byte digest, the kid's text. */
function associatedDataByHand(binding: EnvelopeBinding, kid: string): Uint8Array {
  const { utf8 } = hand;
  return hand.lp(
    utf8('assistant-relay/v1/job-envelope'),
    utf8(String(binding.envelope_version)),
    utf8(String(binding.schema_version)),
    utf8(binding.direction),
    utf8(binding.integration_id),
    utf8(binding.job_id),
    utf8(binding.purpose),
    utf8('true'),
    utf8(binding.deadline_at),
    hand.schemaDigestOf(binding.response_schema),
    utf8(kid),
  );
}

function envelopeByHand({ keys, binding, plaintext_json }: Sealed): EnvelopeValues {
  const key = hex(binding.direction === 'client_to_assistant' ? keys.client_to_assistant_hex : keys.assistant_to_client_hex);
  const ad = associatedDataByHand(binding, keys.kid);
  const plaintext = hand.utf8(plaintext_json);
  const nonce = hand.nonceOf(key, ad, plaintext);
  return {
    response_schema_jcs: canonicalize(binding.response_schema)!,
    response_schema_digest_hex: toHex(hand.schemaDigestOf(binding.response_schema)),
    associated_data_hex: toHex(ad),
    nonce_key_hex: toHex(hand.nonceKeyOf(key)),
    envelope: {
      kid: keys.kid,
      nonce: hand.encodeBase64Url(nonce),
      ciphertext: hand.encodeBase64Url(hand.sealAead(key, nonce, ad, plaintext)),
    },
  };
}

/** The opener's plaintext by hand: `undefined` if it holds no key of that kid or the tag does not check out. */
function openByHand(keys: readonly KeySetVector[], binding: EnvelopeBinding, envelope: ByoEnvelope): string | undefined {
  const held = keys.find((each) => each.kid === envelope.kid);
  const nonce = hand.decodeBase64Url(envelope.nonce, 24);
  const ciphertext = Buffer.from(envelope.ciphertext, 'base64url');
  if (held === undefined || nonce === undefined) return undefined;
  const key = hex(binding.direction === 'client_to_assistant' ? held.client_to_assistant_hex : held.assistant_to_client_hex);
  const opened = hand.openAead(key, nonce, associatedDataByHand(binding, envelope.kid), new Uint8Array(ciphertext));
  return opened === undefined ? undefined : new TextDecoder().decode(opened);
}

function tampered(envelope: ByoEnvelope, tamper: Tamper | undefined): ByoEnvelope {
  if (tamper === undefined) return envelope;
  if ('kid' in tamper) return { ...envelope, kid: tamper.kid };
  const bytes = Buffer.from(envelope[tamper.flip], 'base64url');
  bytes[tamper.byte < 0 ? bytes.length + tamper.byte : tamper.byte]! ^= 0x01;
  return { ...envelope, [tamper.flip]: bytes.toString('base64url') };
}

describe('vectors/envelope.json', () => {
  it.each(casesOf(envelopes, 'envelope'))('%s', (_name, vector) => {
    const { inputs } = vector;
    expect(JSON.stringify(JSON.parse(inputs.plaintext_json))).toBe(inputs.plaintext_json);
    expectOurs(vector, ourEnvelope(inputs));
    const byHand = envelopeByHand(inputs);
    expect(byHand).toEqual(vector.expected);
    // Both ways: libsodium opens what we sealed (the vector's), we open what libsodium sealed.
    expect(openByHand([inputs.keys], inputs.binding, vector.expected.envelope)).toBe(inputs.plaintext_json);
    expect(open(keyringOf([keySetOf(inputs.keys)]).keyOf, inputs.binding, byHand.envelope)).toEqual(JSON.parse(inputs.plaintext_json));
  });

  it.each(casesOf(envelopes, 'envelope_refused'))('does not open: %s', (_name, vector) => {
    const { inputs } = vector;
    const honest = seal(keySetOf(inputs.keys), inputs.binding, JSON.parse(inputs.plaintext_json));
    const envelope = tampered(honest, inputs.tamper);
    const { opener } = inputs;
    expectOurs(vector, {
      envelope,
      associated_data_hex: toHex(associatedData(opener.binding, envelope.kid)),
      opens: !refusedWith(EnvelopeError, () => open(keyringOf(opener.keys.map(keySetOf)).keyOf, opener.binding, envelope)),
    });
    expect(vector.expected.opens).toBe(false);
    expect(toHex(associatedDataByHand(opener.binding, envelope.kid))).toBe(vector.expected.associated_data_hex);
    expect(openByHand(opener.keys, opener.binding, vector.expected.envelope)).toBeUndefined();
    // The control: untampered and opened as it was sealed, it opens; only the change refuses it.
    expect(openByHand([inputs.keys], inputs.binding, honest)).toBe(inputs.plaintext_json);
  });

  it('binds the schema by its canonical JSON: two key orders of one schema give one digest', () => {
    const digests = new Map<string, Set<string>>();
    for (const [, { inputs, expected }] of casesOf(envelopes, 'envelope')) {
      const texts = digests.get(expected.response_schema_digest_hex) ?? new Set();
      digests.set(expected.response_schema_digest_hex, texts.add(JSON.stringify(inputs.binding.response_schema)));
    }
    expect([...digests.values()].some((texts) => texts.size > 1)).toBe(true);
  });
});
