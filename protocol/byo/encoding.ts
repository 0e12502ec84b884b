/**
 * The bytes of BYO encryption as text, and the one way bytes are put together for hashing and for
 * associated data. Browser-safe: no Node module, so the client library can use it as it is.
 *
 * Text is base64url without padding (RFC 4648 §5), decoded strictly: only the alphabet, no padding, no
 * stray bits in the last character, and the exact length the field must have. (Node's own decoder skips
 * characters it does not know, so that a tampered field could decode to the same bytes.)
 */
import { base64urlnopad } from '@scure/base';
import { utf8ToBytes } from '@noble/ciphers/utils.js';

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
 * lists of parts give the same bytes, so nothing can be shifted from one field into the next. Written
 * into one array: every envelope's associated data and nonce are made of it.
 */
export function lengthPrefixed(...parts: ReadonlyArray<string | Uint8Array>): Uint8Array {
  const bytes = parts.map((part) => (typeof part === 'string' ? utf8ToBytes(part) : part));
  let size = 0;
  for (const each of bytes) size += 4 + each.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const each of bytes) {
    writeLength(out, at, each.length);
    out.set(each, at + 4);
    at += 4 + each.length;
  }
  return out;
}

/** A part's length as `lengthPrefixed` writes it: 4 bytes, big-endian. */
export function lengthPrefix(length: number): Uint8Array {
  return writeLength(new Uint8Array(4), 0, length);
}

function writeLength(out: Uint8Array, at: number, length: number): Uint8Array {
  out[at] = length >>> 24;
  out[at + 1] = (length >>> 16) & 0xff;
  out[at + 2] = (length >>> 8) & 0xff;
  out[at + 3] = length & 0xff;
  return out;
}
