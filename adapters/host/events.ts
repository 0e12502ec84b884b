/**
 * `GET /v1/events` (4.2, 6.2): one session's reply stream. Validation and the stream and reader caps
 * answer with ordinary error bodies; once subscribed, the connection belongs to a subscription actor.
 */
import type { FastifyPluginAsync } from 'fastify';
import { EventsHeaders, EventsQuery } from '../../protocol/index.js';
import type { ChatEngine } from '../../engine/chat/engine.js';
import { sendError } from '../http/errors.js';
import { streamTransport } from '../http/sse-transport.js';
import type { StreamSlots } from '../http/stream-slots.js';
import type { ZodTypeProvider } from '../http/validation.js';

export interface EventsOptions {
  readonly engine: ChatEngine;
  readonly slots: StreamSlots;
  /** `Retry-After` on a 429 from the reader cap. */
  readonly readersRetryAfterSeconds: number;
  /** `Retry-After` on a 503 from the stream cap. */
  readonly streamsRetryAfterSeconds: number;
}

export const eventsPlugin: FastifyPluginAsync<EventsOptions> = async (app, options) => {
  const { engine, slots } = options;
  // No HEAD twin: a HEAD response can carry no stream, yet would hold a reader slot and never answer.
  const route = { exposeHeadRoute: false, schema: { querystring: EventsQuery, headers: EventsHeaders } };
  app.withTypeProvider<ZodTypeProvider>().get('/v1/events', route, async (request, reply) => {
    if (slots.take(reply.raw) !== 'taken') {
      return sendError(reply, 'too_many_streams', undefined, { 'retry-after': String(options.streamsRetryAfterSeconds) });
    }
    const cursor = request.headers['last-event-id'];
    const result = engine.subscribe(request.query.session_id, cursor, () => streamTransport(reply));
    if (result.kind === 'too_many_readers') {
      return sendError(reply, 'too_many_readers', undefined, { 'retry-after': String(options.readersRetryAfterSeconds) });
    }
    if (result.kind === 'ended') return reply.code(204).send();
    if (result.kind === 'no_stream') return sendError(reply, 'stream_not_available');
    return reply;
  });
};
