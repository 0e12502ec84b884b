/** `GET /v1/sessions/:session_id`: what the host knows of one session, for debugging (our extension). */
import type { FastifyPluginAsync } from 'fastify';
import { SessionPath } from '../../protocol/index.js';
import type { ChatEngine } from '../../engine/chat/engine.js';
import { sendError } from '../http/errors.js';
import type { ZodTypeProvider } from '../http/validation.js';

export const sessionsPlugin: FastifyPluginAsync<{ readonly engine: ChatEngine }> = async (app, { engine }) => {
  app.withTypeProvider<ZodTypeProvider>().get('/v1/sessions/:session_id', { schema: { params: SessionPath } }, async (request, reply) => {
    const view = await engine.committedSession(request.params.session_id);
    return view === undefined ? sendError(reply, 'session_not_found') : view;
  });
};
