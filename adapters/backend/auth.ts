/**
 * The backend's credentials (5): every route of a scope belongs to one integration (`{id}` in its path)
 * and one role, the plugin's RELAY_TOKEN or the client's token, checked in constant time before the body
 * is read. An unknown integration and a wrong token get the same 401: the answer tells no one which
 * integrations exist.
 */
import fp from 'fastify-plugin';
import { bearerToken } from '../../protocol/index.js';
import type { ReasoningEngine } from '../../engine/reasoning/engine.js';
import { sendError } from '../http/errors.js';

export const integrationAuthPlugin = fp<{ readonly backend: ReasoningEngine; readonly role: 'relay' | 'client' }>(
  async (app, { backend, role }) => {
    app.addHook('onRequest', async (request, reply) => {
      const { id } = request.params as { id?: unknown };
      const token = bearerToken(request.headers.authorization);
      if (typeof id !== 'string' || token === undefined || !backend.integrations.authenticates(id, role, token)) {
        return sendError(reply, 'unauthorized', undefined, { 'www-authenticate': 'Bearer realm="assistant-relay"' });
      }
    });
  },
  { name: 'assistant-relay-integration-auth' },
);
