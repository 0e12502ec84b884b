/**
 * Bearer tokens (5): how they are made, kept and checked, for the host's token and, in the backend, each
 * integration's RELAY_TOKEN and client token, and the operator's pairing tickets. A token is kept only as
 * its SHA-256 digest, and a presented one is checked by comparing digests in constant time, whatever its
 * length.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A fresh token: 24 random bytes, base64url (32 characters). */
export function newToken(): string {
  return randomBytes(24).toString('base64url');
}

/**
 * A fresh pairing ticket (PROTOCOL.md 7.9): `pt_` and a token. A person gives it to a command line
 * (`pair --ticket T`), where a bare token that began with `-` (one in 64) would be taken for a flag.
 */
export function newTicket(): string {
  return `pt_${newToken()}`;
}

/** What is kept of a token: its SHA-256, hex. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Whether `token` is the one `digest` was made of, in constant time. */
export function matchesDigest(token: string, digest: string): boolean {
  const presented = Buffer.from(tokenDigest(token), 'hex');
  const kept = Buffer.from(digest, 'hex');
  return kept.length === presented.length && timingSafeEqual(presented, kept);
}

/** The token of an `Authorization: Bearer …` header; the scheme is case-insensitive (RFC 9110 11.1), the token is not. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^bearer +(.+)$/i.exec(header);
  return match?.[1];
}
