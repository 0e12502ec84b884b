/** `POST /v1/incoming` (4.2): the client adds a user message; answered once it is durably logged. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { IncomingEvent, type IncomingAccepted, type IncomingIgnored } from '../../protocol/index.js';
import type { Engine } from '../../engine/engine.js';
import { sendError } from './errors.js';

export function incomingRoute(app: FastifyInstance, engine: Engine): void {
  app.post('/v1/incoming', async (request, reply) => {
    const parsed = IncomingEvent.safeParse(request.body);
    if (!parsed.success) return sendError(reply, 'invalid_request', z.prettifyError(parsed.error));
    const event = parsed.data;
    if (event.callback !== undefined) return sendError(reply, 'callback_not_supported');
    const result = await engine.incoming(event);
    if (result === 'session_ended') {
      const ignored: IncomingIgnored = { ok: true, ignored: true, reason: 'session_ended' };
      return reply.code(200).send(ignored);
    }
    const accepted: IncomingAccepted = {
      ok: true,
      session_id: event.session_id,
      task_id: event.task_id,
      ...(result === 'duplicate' ? { duplicate: true as const } : {}),
    };
    return reply.code(202).send(accepted);
  });
}
