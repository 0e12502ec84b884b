/**
 * BYO's cryptography written again from PROTOCOL.md section 7 alone, with libsodium (X25519,
 * XChaCha20-Poly1305, strict base64url) and node:crypto (SHA-256, HMAC, HKDF) and no code of
 * protocol/byo: what the test vectors are checked against besides our own code, as another team would.
 * Every input's encoding is spelled out where it is used (7.15).
 */
import { createHash, createHmac, hkdfSync } from 'node:crypto';
import canonicalize from 'canonicalize';
import sodium from 'libsodium-wrappers';

await sodium.ready;

/** A text's UTF-8 bytes: labels, ids, decimals, and the base64url texts rotation binds. */
export const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
const concat = (...parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));

/** LP: for each part, its length in bytes as 4 bytes big-endian, then the bytes; nothing else. */
export function lp(...parts: Uint8Array[]): Uint8Array {
  return concat(
    ...parts.flatMap((part) => {
      const length = new Uint8Array(4);
      new DataView(length.buffer).setUint32(0, part.length, false);
      return [length, part];
    }),
  );
}

/** Strict base64url (7.1), as libsodium decodes it: `undefined` for anything but the canonical text of `length` bytes. */
export function decodeBase64Url(text: string, length: number): Uint8Array | undefined {
  try {
    const bytes = sodium.from_base64(text, sodium.base64_variants.URLSAFE_NO_PADDING);
    return bytes.length === length ? bytes : undefined;
  } catch {
    return undefined;
  }
}

export const encodeBase64Url = (bytes: Uint8Array): string => sodium.to_base64(bytes, sodium.base64_variants.URLSAFE_NO_PADDING);
export const sha256 = (bytes: Uint8Array): Uint8Array => new Uint8Array(createHash('sha256').update(bytes).digest());
export const hmacSha256 = (key: Uint8Array, bytes: Uint8Array): Uint8Array =>
  new Uint8Array(createHmac('sha256', key).update(bytes).digest());
/** HKDF-SHA256 (RFC 5869), extract and expand. */
export const hkdfSha256 = (ikm: Uint8Array, salt: Uint8Array, info: Uint8Array, length: number): Uint8Array =>
  new Uint8Array(hkdfSync('sha256', ikm, salt, info, length));
export const publicKeyOf = (secretKey: Uint8Array): Uint8Array => sodium.crypto_scalarmult_base(secretKey);
/** X25519; libsodium refuses an all-zero result itself. */
export const x25519 = (secretKey: Uint8Array, publicKey: Uint8Array): Uint8Array => sodium.crypto_scalarmult(secretKey, publicKey);

export const KEY_LABELS = ['client_to_assistant', 'assistant_to_client', 'confirm', 'kid'] as const;

/** 7.4: one HKDF per label, info LP(transcript, label); `kid` is 9 bytes, named by their base64url. */
export function keysOf(shared: Uint8Array, salt: Uint8Array, transcript: Uint8Array) {
  const draw = (label: string, length: number) => hkdfSha256(shared, salt, lp(transcript, utf8(label)), length);
  return {
    kid: encodeBase64Url(draw('kid', 9)),
    client_to_assistant: draw('client_to_assistant', 32),
    assistant_to_client: draw('assistant_to_client', 32),
    confirm: draw('confirm', 32),
  };
}

/** 7.5: the code as typed, read back: upper case, no dashes or whitespace, I and L as 1, O as 0; 20 Crockford characters. */
export function readCode(text: string): { readonly handle: string; readonly secret: string } | undefined {
  const same: Record<string, string> = { I: '1', L: '1', O: '0' };
  const canonical = [...text.toUpperCase()]
    .filter((c) => c !== '-' && c.trim() !== '')
    .map((c) => same[c] ?? c)
    .join('');
  return /^[0-9A-HJKMNP-TV-Z]{20}$/.test(canonical) ? { handle: canonical.slice(0, 5), secret: canonical.slice(5) } : undefined;
}

/** 7.7: the first 4 bytes of the digest, big-endian, modulo 10^6, as `ddd ddd`. */
export function sasOf(digest: Uint8Array): string {
  const digits = String(Buffer.from(digest).readUInt32BE(0) % 1_000_000).padStart(6, '0');
  return `${digits.slice(0, 3)} ${digits.slice(3)}`;
}

/** 7.15: SHA-256 of the RFC 8785 canonical JSON's UTF-8. */
export const schemaDigestOf = (schema: unknown): Uint8Array => sha256(utf8(canonicalize(schema)!));

/** 7.2: HKDF-Expand(sealing key, label, 32): one block, HMAC(key, info || 0x01). */
export const nonceKeyOf = (key: Uint8Array): Uint8Array =>
  hmacSha256(key, concat(utf8('assistant-relay/v1/envelope-nonce'), Uint8Array.of(1)));

/** 7.2: the first 24 bytes of HMAC(nonce key, LP(associated data, plaintext)). */
export const nonceOf = (key: Uint8Array, ad: Uint8Array, plaintext: Uint8Array): Uint8Array =>
  hmacSha256(nonceKeyOf(key), lp(ad, plaintext)).slice(0, 24);

export const sealAead = (key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, plaintext: Uint8Array): Uint8Array =>
  sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(plaintext, ad, null, nonce, key);

/** The plaintext, or `undefined` when the tag does not check out. */
export function openAead(key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, ciphertext: Uint8Array): Uint8Array | undefined {
  try {
    return sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(null, ciphertext, ad, nonce, key);
  } catch {
    return undefined;
  }
}
