import { describe, expect, it } from 'vitest';
import { bearerToken, matchesDigest, newTicket, newToken, tokenDigest } from '../../protocol/tokens.js';

describe('tokens', () => {
  it('are 32 base64url characters, fresh each time', () => {
    const [a, b] = [newToken(), newToken()];
    expect(a).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(a).not.toBe(b);
  });

  // A bare token began with `-` one time in 64, and `pair --ticket T` then refused T as a flag (exit 2).
  it('as pairing tickets never begin with a dash, so a command line takes them as the value of --ticket', () => {
    const tickets = Array.from({ length: 2_000 }, newTicket);
    for (const ticket of tickets) expect(ticket).toMatch(/^pt_[A-Za-z0-9_-]{32}$/);
    expect(new Set(tickets).size).toBe(tickets.length);
  });

  it('are kept as a digest that matches the token only', () => {
    const token = newToken();
    const digest = tokenDigest(token);
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(digest).not.toContain(token);
    expect(matchesDigest(token, digest)).toBe(true);
    expect(matchesDigest(`${token}x`, digest)).toBe(false);
    expect(matchesDigest('', digest)).toBe(false);
    expect(matchesDigest(token, 'not a digest')).toBe(false);
  });

  it.each([
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['BEARER   abc', 'abc'],
    ['Basic abc', undefined],
    ['Bearer', undefined],
    [undefined, undefined],
  ])('bearerToken(%s) is %s', (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });
});
