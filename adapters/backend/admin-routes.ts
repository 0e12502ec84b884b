/**
 * The operator's side of the backend (PROTOCOL.md 6e.12): create integrations while the backend runs,
 * list them, rotate a token, revoke an integration; issue a pairing ticket (7.8). Guarded by the operator token, checked in constant time
 * against its digest before the body is read; a backend started without one has no admin routes at all.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import {
  IntegrationCreateBody,
  IntegrationPath,
  PairingTicketBody,
  TokenRolePath,
  bearerToken,
  matchesDigest,
} from '../../protocol/index.js';
import type { ReasoningEngine } from '../../engine/reasoning/engine.js';
import { sendError } from '../http/errors.js';
import type { ZodTypeProvider } from '../http/validation.js';
import { sendRefusal } from './pairing-routes.js';
import { integrationView } from './view.js';

const BASE = '/api/v1/admin/integrations';

/** The operator's credential, checked in constant time before the body is read: an `onRequest` hook (the admin routes', `/metrics`'). */
export function operatorGuard(operatorTokenDigest: string) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const token = bearerToken(request.headers.authorization);
    if (token === undefined || !matchesDigest(token, operatorTokenDigest)) {
      return sendError(reply, 'unauthorized', undefined, { 'www-authenticate': 'Bearer realm="assistant-relay-admin"' });
    }
  };
}

export const adminRoutes: FastifyPluginAsync<{ readonly backend: ReasoningEngine; readonly operatorTokenDigest: string }> = async (
  scope,
  { backend, operatorTokenDigest },
) => {
  scope.addHook('onRequest', operatorGuard(operatorTokenDigest));
  const app = scope.withTypeProvider<ZodTypeProvider>();

  app.post(BASE, { schema: { body: IntegrationCreateBody } }, async (request, reply) => {
    const created = await backend.integrations.create(request.body.provider_kind);
    if ('refused' in created) return sendError(reply, 'provider_refused', created.refused.message);
    return reply.code(201).send(created);
  });

  app.get(BASE, async () => ({
    integrations: (await backend.committedIntegrations()).map((read) => integrationView(read)),
  }));

  app.post(`${BASE}/:id/tokens/:role/rotate`, { schema: { params: TokenRolePath } }, async (request, reply) => {
    const { id, role } = request.params;
    const rotated = await backend.integrations.rotate(id, role);
    return 'refused' in rotated ? sendError(reply, rotated.refused) : { integration_id: id, role, token: rotated.token };
  });

  app.post(`${BASE}/:id/revoke`, { schema: { params: IntegrationPath } }, async (request, reply) => {
    const revoked = await backend.integrations.revoke(request.params.id);
    if (revoked === undefined) return sendError(reply, 'integration_not_found');
    const read = (await backend.committedIntegration(request.params.id))!;
    return integrationView(read);
  });

  app.post('/api/v1/admin/pairing-tickets', { schema: { body: PairingTicketBody } }, async (request, reply) => {
    const issued = await backend.pairings.issueTicket(request.body.ttl_ms);
    if ('refused' in issued) return sendRefusal(reply, issued);
    return reply.code(201).send({ ticket: issued.ticket, expires_at: new Date(issued.expires_at).toISOString() });
  });
};
