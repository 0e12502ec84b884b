/**
 * What the kit's own servers and readers share: waiting for something to arrive, within a time (the
 * stream reader, the callback listener, the backend it plays), and listening on an address.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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
