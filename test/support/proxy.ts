/** A TCP proxy on loopback in front of a server, for tests that cut or refuse a client's connections. */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface CuttableProxy {
  readonly url: string;
  /** Destroys every connection through it now (both ends). */
  cut(): void;
  /** While true, a connection is closed at once, as a network that is down. */
  refusing: boolean;
  /** While true, a connection that asks for a Form A stream (`GET /v1/events`) is closed; other requests pass. */
  refusingStreams: boolean;
  close(): Promise<void>;
}

export async function cuttableProxy(target: string): Promise<CuttableProxy> {
  const { hostname, port } = new URL(target);
  const live = new Set<Socket>();
  const proxy: CuttableProxy = {
    url: '',
    refusing: false,
    refusingStreams: false,
    cut() {
      for (const socket of [...live]) socket.destroy();
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((inbound) => {
    if (proxy.refusing) {
      inbound.destroy();
      return;
    }
    const outbound = connect(Number(port), hostname);
    for (const socket of [inbound, outbound]) {
      live.add(socket);
      socket.on('close', () => live.delete(socket));
      socket.on('error', () => undefined);
    }
    // A kept-alive connection may carry a stream request later: each chunk is looked at, not only the first.
    inbound.on('data', (chunk: Buffer) => {
      if (proxy.refusingStreams && chunk.toString('latin1', 0, 15) === 'GET /v1/events?') inbound.destroy();
      else outbound.write(chunk);
    });
    outbound.pipe(inbound);
    inbound.on('close', () => outbound.destroy());
    outbound.on('close', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as { port: number };
  return Object.assign(proxy, { url: `http://127.0.0.1:${own}` });
}
