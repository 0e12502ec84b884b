/**
 * The test vectors' files (vectors/*.json, vectors/README.md): read for the tests that check them, and,
 * with `UPDATE_VECTORS=1`, written back with each case's `expected` as our code computes it, for a
 * maintainer who added a case's inputs. A changed expected value is a protocol change.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, expect } from 'vitest';
import type { SessionKeys } from '../../protocol/index.js';

const UPDATING = process.env.UPDATE_VECTORS === '1';

export interface VectorCase<Step extends string, Inputs, Expected> {
  readonly step: Step;
  readonly name: string;
  readonly inputs: Inputs;
  expected: Expected;
}

export interface VectorFile<Case> {
  readonly description: string;
  readonly spec: string;
  readonly cases: Case[];
}

/** `vectors/<name>`, parsed; when updating, written back once the file's tests have run. */
export function vectorFile<Case>(name: string): VectorFile<Case> {
  const url = new URL(`../../vectors/${name}`, import.meta.url);
  const file = JSON.parse(readFileSync(url, 'utf8')) as VectorFile<Case>;
  if (UPDATING) afterAll(() => writeFileSync(url, `${JSON.stringify(file, null, 2)}\n`));
  return file;
}

/** The cases of one step, as `it.each` takes them: each with its name first. */
export function casesOf<Case extends { readonly step: string; readonly name: string }, Step extends Case['step']>(
  file: VectorFile<Case>,
  step: Step,
): (readonly [string, Extract<Case, { readonly step: Step }>])[] {
  return file.cases
    .filter((vector): vector is Extract<Case, { readonly step: Step }> => vector.step === step)
    .map((vector) => [vector.name, vector] as const);
}

/** Whether `run` refused, by throwing a `kind` (anything else it throws fails the test). */
export function refusedWith(kind: abstract new (...args: never[]) => Error, run: () => unknown): boolean {
  try {
    run();
    return false;
  } catch (error) {
    expect(error).toBeInstanceOf(kind);
    return true;
  }
}

/** Our code's values for a case: equal to the file's, or, when updating, the file's from now on. */
export function expectOurs<Expected>(vector: { expected: Expected }, ours: Expected): void {
  if (UPDATING) vector.expected = ours;
  else expect(ours).toEqual(vector.expected);
}

/** A set of keys as the vectors write it: `kid` as its text, each key in hex. */
export interface KeySetVector {
  readonly kid: string;
  readonly client_to_assistant_hex: string;
  readonly assistant_to_client_hex: string;
  readonly confirm_hex: string;
}

/** What a key derivation (a pairing's or a rotation's, PROTOCOL.md 7.15 row 6) takes and gives. */
export interface DerivationValues {
  readonly shared_secret_hex: string;
  readonly salt_input_hex: string;
  readonly salt_hex: string;
  readonly transcript_hex: string;
  /** Each HKDF draw's info, by label. */
  readonly hkdf_info_hex: Readonly<Record<string, string>>;
  readonly keys: KeySetVector;
}

export const hex = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'hex'));
export const toHex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

export function keySetOf(vector: KeySetVector): SessionKeys {
  return {
    kid: vector.kid,
    client_to_assistant: hex(vector.client_to_assistant_hex),
    assistant_to_client: hex(vector.assistant_to_client_hex),
    confirm: hex(vector.confirm_hex),
  };
}

export function keySetVector(keys: SessionKeys): KeySetVector {
  return {
    kid: keys.kid,
    client_to_assistant_hex: toHex(keys.client_to_assistant),
    assistant_to_client_hex: toHex(keys.assistant_to_client),
    confirm_hex: toHex(keys.confirm),
  };
}

/** A base64url text's bytes with the first bit flipped: a MAC or a tag a relay changed. */
export function flippedBase64Url(text: string): string {
  const bytes = Buffer.from(text, 'base64url');
  bytes[0]! ^= 0x80;
  return bytes.toString('base64url');
}
