/**
 * The bytes of BYO encryption as text, and the one way bytes are put together for hashing and for
 * associated data. Browser-safe: no Node module, so the client library can use it as it is.
 *
 * Text is base64url without padding (RFC 4648 §5), decoded strictly: only the alphabet, no padding, no
 * stray bits in the last character, and the exact length the field must have. (Node's own decoder skips
 * characters it does not know, so that a tampered field could decode to the same bytes.)
 */
import { base64urlnopad } from '@scure/base';
import { concatBytes, utf8ToBytes } from '@noble/ciphers/utils.js';

export function toBase64Url(bytes: Uint8Array): string {
  return base64urlnopad.encode(bytes);
}

/** The bytes `text` encodes, if it is strict base64url of `bytes` bytes (or at least `atLeast`); else `undefined`. */
export function fromBase64Url(text: string, length: { readonly bytes: number } | { readonly atLeast: number }): Uint8Array | undefined {
  let decoded: Uint8Array;
  try {
    decoded = base64urlnopad.decode(text);
  } catch {
    return undefined;
  }
  const fits = 'bytes' in length ? decoded.length === length.bytes : decoded.length >= length.atLeast;
  return fits ? decoded : undefined;
}

/**
 * Each part as its length (4 bytes, big-endian) then its bytes (a string as UTF-8): no two different
 * lists of parts give the same bytes, so nothing can be shifted from one field into the next.
 */
export function lengthPrefixed(...parts: ReadonlyArray<string | Uint8Array>): Uint8Array {
  return concatBytes(
    ...parts.flatMap((part) => {
      const bytes = typeof part === 'string' ? utf8ToBytes(part) : part;
      const length = new Uint8Array(4);
      new DataView(length.buffer).setUint32(0, bytes.length);
      return [length, bytes];
    }),
  );
}
