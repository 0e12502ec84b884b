/** An SSE response as the engine's subscriber transport: the host's reply streams and the backend's job streams alike. */
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { SubscriberTransport } from '../../engine/core/subscription-actor.js';

/**
 * The raw response, behind the engine's interface. One object of a class, not a closure a method: an idle
 * stream costs its memory for as long as it is open, and thousands may be.
 */
class SseTransport implements SubscriberTransport {
  constructor(private readonly res: ServerResponse) {}

  write(chunk: string): boolean {
    const ok = this.res.write(chunk);
    // http corks the socket on a write and uncorks it on the next tick, to merge small writes. A
    // committed batch is already one write: send it now, not after every microtask queued behind it.
    this.res.socket?.uncork();
    return ok;
  }

  get buffered(): number {
    return this.res.writableLength;
  }

  get closed(): boolean {
    const { res } = this;
    return res.destroyed || res.writableEnded || res.socket === null || res.socket.destroyed;
  }

  end(): void {
    this.res.end();
  }

  destroy(): void {
    this.res.destroy();
  }

  onDrain(listener: () => void): void {
    this.res.on('drain', listener);
  }

  onClose(listener: () => void): void {
    this.res.on('close', listener);
  }
}

/** Takes the raw response over from fastify and exposes it as the engine's transport. */
export function streamTransport(reply: FastifyReply): SubscriberTransport {
  // Headers the hooks set on the reply (CORS's among them) would be lost once it is hijacked: carried over.
  const set = Object.fromEntries(
    Object.entries(reply.getHeaders()).filter((entry): entry is [string, string | number | string[]] => entry[1] !== undefined),
  );
  reply.hijack();
  const res = reply.raw;
  res.socket?.setNoDelay(true);
  res.writeHead(200, {
    ...set,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  return new SseTransport(res);
}
