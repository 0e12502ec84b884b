/**
 * What the kit's own servers and readers share: waiting for something to arrive, within a time (the
 * stream reader, the callback listener, the backend it plays), listening on an address, and reading a
 * request's body within a bound.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sleep, systemClock } from '../../engine/core/clock.js';
import { RuleBroken } from './check.js';

export class Arrivals {
  private readonly waiting = new Set<() => void>();

  /** Resolves at the next `arrived()`, or after `ms`. */
  next(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiting.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.waiting.add(wake);
    });
  }

  /** Resolves once `holds()` does, looked at after each arrival; a `RuleBroken` with `failure()`'s words after `ms`. */
  async until(holds: () => boolean, ms: number, failure: () => string): Promise<void> {
    const deadline = performance.now() + ms;
    while (!holds()) {
      const left = deadline - performance.now();
      if (left <= 0) throw new RuleBroken(failure());
      await this.next(left);
    }
  }

  /** Wakes everything waiting. */
  arrived(): void {
    for (const wake of [...this.waiting]) wake();
  }
}

/** An HTTP server listening on `host:port` (0: any free port), and its origin. */
export async function listening(host: string, port: number): Promise<{ server: Server; origin: string }> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return { server, origin: `http://${host.includes(':') ? `[${host}]` : host}:${bound}` };
}

/**
 * A request's body as text, once it has all come; past `maxBytes` the request is cut and nothing more is
 * read (an implementation under test is not trusted to send a bounded body).
 */
export function bodyText(request: IncomingMessage, maxBytes: number, then: (text: string) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  request.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > maxBytes) request.destroy();
    else chunks.push(chunk);
  });
  request.on('end', () => then(Buffer.concat(chunks).toString('utf8')));
}

/** JSON text parsed; `undefined` for text that is not JSON. */
export function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Waits `ms`, or less if `signal` aborts first (a check whose time is up stops waiting). */
export async function pause(ms: number, signal?: AbortSignal): Promise<void> {
  await sleep(systemClock, ms, signal);
}
