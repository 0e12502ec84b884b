/**
 * `GET /v1/events` (4.2, 6.2): one session's reply stream. Validation and the stream and reader caps
 * answer with ordinary error bodies; once subscribed, the connection belongs to a subscription actor.
 */
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { EventsHeaders, EventsQuery } from '../../protocol/index.js';
import type { Engine } from '../../engine/engine.js';
import type { SubscriberTransport } from '../../engine/subscription-actor.js';
import { sendError } from './errors.js';
import type { StreamSlots } from './stream-slots.js';
import type { ZodTypeProvider } from './validation.js';

/** Takes the raw response over from fastify and exposes it as the engine's transport. */
function streamTransport(reply: FastifyReply): SubscriberTransport {
  reply.hijack();
  const res = reply.raw;
  res.socket?.setNoDelay(true);
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  return {
    write: (chunk) => {
      const ok = res.write(chunk);
      // http corks the socket on a write and uncorks it on the next tick, to merge small writes. A
      // committed batch is already one write: send it now, not after every microtask queued behind it.
      res.socket?.uncork();
      return ok;
    },
    get buffered() {
      return res.writableLength;
    },
    get closed() {
      return res.destroyed || res.writableEnded || res.socket === null || res.socket.destroyed;
    },
    end: () => res.end(),
    destroy: () => res.destroy(),
    onDrain: (listener) => res.on('drain', listener),
    onClose: (listener) => res.on('close', listener),
  };
}

export interface EventsOptions {
  readonly engine: Engine;
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
    if (!slots.take(reply.raw)) {
      return sendError(reply, 'too_many_streams', undefined, { 'retry-after': String(options.streamsRetryAfterSeconds) });
    }
    const cursor = request.headers['last-event-id'];
    const result = await engine.subscribe(request.query.session_id, cursor, () => streamTransport(reply));
    if (result.kind === 'too_many_readers') {
      return sendError(reply, 'too_many_readers', undefined, { 'retry-after': String(options.readersRetryAfterSeconds) });
    }
    if (result.kind === 'ended') return reply.code(204).send();
    if (result.kind === 'no_stream') return sendError(reply, 'stream_not_available');
    return reply;
  });
};
