/**
 * Connections on which nothing was ever sent end soon after the server starts closing. Node's `close()`
 * waits for them until the client drops them (fetch opens spare connections and keeps them for seconds),
 * though nothing is in flight on one. A connection whose first bytes arrive within the grace is left
 * alone: its request gets its answer (503 `shutting_down` once closing).
 */
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/** Long enough for a request already on its way when closing begins to arrive (a round trip or so). */
const SPARE_GRACE_MS = 250;

export function closeSpareConnectionsOnClose(app: FastifyInstance): void {
  const spare = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    spare.add(socket);
    socket.once('close', () => spare.delete(socket));
  });
  app.server.on('request', (request: { socket: Socket }) => spare.delete(request.socket));
  app.addHook('preClose', async () => {
    if (spare.size === 0) return;
    // Node's parser reads the socket itself: `bytesRead` is the only sign that a request has begun.
    setTimeout(() => {
      for (const socket of spare) if (socket.bytesRead === 0) socket.destroy();
    }, SPARE_GRACE_MS).unref();
  });
}
