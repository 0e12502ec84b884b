/**
 * Bearer authentication (5): one `onRequest` hook for every route of the scope this plugin is registered
 * in, run before the body is even read. The comparison is constant-time.
 */
import fp from 'fastify-plugin';
import { bearerToken, matchesDigest, tokenDigest } from '../../protocol/index.js';
import { sendError } from './errors.js';

export function bearerMatcher(token: string): (header: string | undefined) => boolean {
  const expected = tokenDigest(token);
  return (header) => {
    const presented = bearerToken(header);
    return presented !== undefined && matchesDigest(presented, expected);
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
