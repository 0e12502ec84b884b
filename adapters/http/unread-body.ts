/**
 * A failure answered before its request's body has all arrived (a 413 read from `Content-Length`, a 415)
 * closes the connection: what is left of the body cannot be told from a next request. But a socket closed
 * with bytes unread is reset, and a client still sending hears of the reset (EPIPE, ECONNRESET) before it
 * reads the answer. So the answer goes out at once, with `Connection: close`, and the connection closes
 * only once the rest of the body has been read and dropped: at most `UNREAD_BODY.maxBytes` more, for at
 * most `UNREAD_BODY.maxMs` (PROTOCOL.md 4.6); past either it closes as it is.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

export const UNREAD_BODY = {
  /** Bytes of the body read and dropped after the answer: a client that sent a few times too much still reads it. */
  maxBytes: 16 * 1024 * 1024,
  /** How long they may take to arrive. */
  maxMs: 10_000,
} as const;

/** Sends `status` and `body` (JSON text) now; ends the answer, and so the connection, once the body is read. */
export function answerBeforeBody(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  body: string,
  headers: Record<string, string>,
): FastifyReply {
  reply.hijack();
  const response = reply.raw;
  // What hooks set (CORS, say) goes out too.
  for (const [name, value] of Object.entries({ ...reply.getHeaders(), ...headers }))
    if (value !== undefined) response.setHeader(name, value);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  response.write(body);
  const incoming = request.raw;
  let left: number = UNREAD_BODY.maxBytes;
  const onData = (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) close();
  };
  const close = () => {
    clearTimeout(timer);
    incoming.off('data', onData).off('end', close).off('error', close).off('close', close);
    if (!response.writableEnded) response.end();
  };
  const timer = setTimeout(close, UNREAD_BODY.maxMs);
  incoming.on('data', onData).once('end', close).once('error', close).once('close', close);
  incoming.resume();
  return reply;
}
