/**
 * Bearer authentication (5): one `onRequest` hook for every route of the scope this plugin is registered
 * in, run before the body is even read. The comparison is constant-time.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import fp from 'fastify-plugin';
import { sendError } from './errors.js';

// Comparing digests keeps the comparison constant-time whatever the presented token's length.
const digest = (text: string) => hash('sha256', text, 'buffer');

export function bearerMatcher(token: string): (header: string | undefined) => boolean {
  const expected = digest(token);
  return (header) => {
    // The scheme is case-insensitive (RFC 9110 11.1); the token is not.
    const match = header === undefined ? null : /^bearer +(.+)$/i.exec(header);
    return match !== null && timingSafeEqual(digest(match[1]!), expected);
  };
}

export const authPlugin = fp<{ readonly token: string }>(
  async (app, { token }) => {
    const matches = bearerMatcher(token);
    app.addHook('onRequest', async (request, reply) => {
      if (!matches(request.headers.authorization)) {
        return sendError(reply, 'unauthorized', undefined, { 'www-authenticate': 'Bearer realm="assistant-relay"' });
      }
    });
  },
  { name: 'assistant-relay-auth' },
);
