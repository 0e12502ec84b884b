/**
 * A TCP proxy on loopback in front of a server, for tests that cut, refuse or hold a client's
 * connections: the bytes pass untouched, so what the client sees is what the server wrote, only later.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface CuttableProxy {
  readonly url: string;
  /** Destroys every connection through it now (both ends). */
  cut(): void;
  /** Destroys the connections that asked for a Form A stream (`GET /v1/events`). */
  cutStreams(): void;
  /** While true, a connection is closed at once, as a network that is down. */
  refusing: boolean;
  /** While true, a connection that asks for a Form A stream (`GET /v1/events`) is closed; other requests pass. */
  refusingStreams: boolean;
  /**
   * `POST /v1/incoming` from now on: `held`, neither the request reaches the server nor its answer the
   * client; `forwarded`, held requests (and new ones) reach the server, their answers are still held;
   * `passing` (the default), everything held goes on and nothing more is held.
   */
  incoming: 'passing' | 'held' | 'forwarded';
  /** Connections holding a `POST /v1/incoming` now. */
  readonly heldIncoming: number;
  /** While true, a stream request is held before the server: `answerStreams` sends them on or refuses them. */
  holdingStreams: boolean;
  /** Stream requests held now. */
  readonly heldStreams: number;
  /** Held stream requests reach the server (`undefined`), or are answered with this status and `Retry-After: 1`. */
  answerStreams(status?: number): void;
  close(): Promise<void>;
}

interface Link {
  readonly inbound: Socket;
  readonly outbound: Socket;
  /** What it carries, once its first request says. */
  kind: 'stream' | 'incoming' | 'other';
  /** A stream request held before the server. */
  streamHeld: boolean;
  /** Client bytes not yet sent on, and server bytes not yet sent back. */
  readonly requests: Buffer[];
  readonly answers: Buffer[];
}

const STREAM = 'GET /v1/events?';
const INCOMING = 'POST /v1/incoming';

export async function cuttableProxy(target: string): Promise<CuttableProxy> {
  const { hostname, port } = new URL(target);
  const links = new Set<Link>();
  let incoming: CuttableProxy['incoming'] = 'passing';
  let holdingStreams = false;

  const flush = (link: Link) => {
    if (!link.streamHeld && !(link.kind === 'incoming' && incoming === 'held'))
      for (const chunk of link.requests.splice(0)) link.outbound.write(chunk);
    if (!(link.kind === 'incoming' && incoming !== 'passing')) for (const chunk of link.answers.splice(0)) link.inbound.write(chunk);
  };
  const heldOf = (kind: Link['kind']) =>
    [...links].filter((link) => link.kind === kind && (link.requests.length > 0 || link.answers.length > 0)).length;

  const proxy: CuttableProxy = {
    url: '',
    refusing: false,
    refusingStreams: false,
    cut() {
      for (const link of [...links]) link.inbound.destroy();
    },
    cutStreams() {
      for (const link of [...links]) if (link.kind === 'stream') link.inbound.destroy();
    },
    get incoming() {
      return incoming;
    },
    set incoming(value) {
      incoming = value;
      for (const link of links) if (link.kind === 'incoming') flush(link);
    },
    get heldIncoming() {
      return heldOf('incoming');
    },
    get holdingStreams() {
      return holdingStreams;
    },
    set holdingStreams(value) {
      holdingStreams = value;
    },
    get heldStreams() {
      return [...links].filter((link) => link.streamHeld).length;
    },
    answerStreams(status) {
      for (const link of [...links]) {
        if (!link.streamHeld) continue;
        link.streamHeld = false;
        if (status === undefined) flush(link);
        else {
          link.requests.splice(0);
          link.inbound.end(`HTTP/1.1 ${status} Refused\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`);
        }
      }
    },
    // Its connections go too: a kept-alive one would hold the close for seconds.
    close: () => {
      proxy.cut();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };

  const server: Server = createServer((inbound) => {
    if (proxy.refusing) {
      inbound.destroy();
      return;
    }
    const outbound = connect(Number(port), hostname);
    const link: Link = { inbound, outbound, kind: 'other', streamHeld: false, requests: [], answers: [] };
    links.add(link);
    for (const socket of [inbound, outbound]) {
      socket.on('error', () => undefined);
      socket.on('close', () => {
        links.delete(link);
        inbound.destroy();
        outbound.destroy();
      });
    }
    // A kept-alive connection may carry a stream request later: each chunk is looked at, not only the first.
    inbound.on('data', (chunk: Buffer) => {
      const head = chunk.toString('latin1', 0, 17);
      // A request's first chunk says what the connection carries now (a kept-alive one may carry several).
      if (/^[A-Z]+ \//.test(head)) link.kind = head.startsWith(STREAM) ? 'stream' : head.startsWith(INCOMING) ? 'incoming' : 'other';
      if (link.kind === 'stream' && proxy.refusingStreams) {
        inbound.destroy();
        return;
      }
      if (link.kind === 'stream' && holdingStreams && link.requests.length === 0 && /^[A-Z]+ \//.test(head)) link.streamHeld = true;
      link.requests.push(chunk);
      flush(link);
    });
    outbound.on('data', (chunk: Buffer) => {
      link.answers.push(chunk);
      flush(link);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as { port: number };
  return Object.assign(proxy, { url: `http://127.0.0.1:${own}` });
}
