/** `POST /v1/incoming` (4.2, 4.3): the client adds a user message; answered once it is durably logged. */
import type { FastifyPluginAsync } from 'fastify';
import { IncomingEvent, isUuid, type IncomingAccepted, type IncomingIgnored } from '../../protocol/index.js';
import type { ChatEngine } from '../../engine/chat/engine.js';
import type { CallbackPolicy } from '../callback/policy.js';
import { sendError } from '../http/errors.js';
import type { ZodTypeProvider } from '../http/validation.js';

export const incomingPlugin: FastifyPluginAsync<{ readonly engine: ChatEngine; readonly callbacks: CallbackPolicy }> = async (
  app,
  { engine, callbacks },
) => {
  app.withTypeProvider<ZodTypeProvider>().post('/v1/incoming', { schema: { body: IncomingEvent } }, async (request, reply) => {
    const event = request.body;
    // Which form a session follows is the engine's state, not the request's shape: no schema can say it.
    if (engine.formOf(event.session_id) === 'B' && !isUuid(event.task_id)) return sendError(reply, 'invalid_task_id');
    if (event.callback !== undefined) {
      // Checked before anything is logged (and again before every attempt): a refused URL never enters the log.
      // A name that does not resolve yet is not refused: each attempt looks it up again. One that takes too
      // long is: the client hears so at once instead of waiting on a resolver.
      const check = await callbacks.check(event.callback.url);
      if (check.kind === 'refused') return sendError(reply, 'callback_not_allowed', check.message);
      if (check.kind === 'lookup_timeout') return sendError(reply, 'callback_lookup_timeout', check.message);
    }
    const result = await engine.incoming(event);
    if (result === 'callback_required') return sendError(reply, 'callback_required');
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
};
