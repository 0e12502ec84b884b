/**
 * `GET /v1/events` (4.2, 6.2): one session's reply stream. Validation and the reader cap answer with
 * ordinary error bodies; once subscribed, the connection belongs to a subscription actor.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { isSessionId, parseEventId, type EventId } from '../../protocol/index.js';
import type { Engine } from '../../engine/engine.js';
import type { SubscriberTransport } from '../../engine/subscription-actor.js';
import { sendError } from './errors.js';

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

export function eventsRoute(app: FastifyInstance, engine: Engine, retryAfterSeconds: number): void {
  // No HEAD twin: a HEAD response can carry no stream, yet would hold a reader slot and never answer.
  app.get('/v1/events', { exposeHeadRoute: false }, async (request, reply) => {
    const { session_id: sessionId } = request.query as Record<string, unknown>;
    if (sessionId === undefined || sessionId === '') return sendError(reply, 'missing_session_id');
    if (typeof sessionId !== 'string' || !isSessionId(sessionId)) return sendError(reply, 'invalid_session_id');
    const header = request.headers['last-event-id'];
    let cursor: EventId | undefined;
    if (header !== undefined) {
      cursor = typeof header === 'string' ? parseEventId(header) : undefined;
      if (cursor === undefined) return sendError(reply, 'invalid_last_event_id');
    }
    const result = await engine.subscribe(sessionId, cursor, () => streamTransport(reply));
    if (result.kind === 'too_many_readers') {
      return sendError(reply, 'too_many_readers', undefined, { 'retry-after': String(retryAfterSeconds) });
    }
    if (result.kind === 'ended') return reply.code(204).send();
    if (result.kind === 'no_stream') return sendError(reply, 'stream_not_available');
    return reply;
  });
}
