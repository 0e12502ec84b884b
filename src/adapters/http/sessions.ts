/** `GET /v1/sessions/:session_id`: what the host knows of one session, for debugging (our extension). */
import type { FastifyInstance } from 'fastify';
import { isSessionId } from '../../protocol/index.js';
import type { Engine } from '../../engine/engine.js';
import { sendError } from './errors.js';

export function sessionsRoute(app: FastifyInstance, engine: Engine): void {
  app.get('/v1/sessions/:session_id', async (request, reply) => {
    const { session_id: sessionId } = request.params as { session_id: string };
    if (!isSessionId(sessionId)) return sendError(reply, 'invalid_session_id');
    const view = await engine.committedSession(sessionId);
    return view === undefined ? sendError(reply, 'session_not_found') : view;
  });
}
