/**
 * A load balancer for tests, in front of several backend nodes, as an operator would put one: each
 * request goes to the next node in turn (so that consecutive requests of one client meet different nodes),
 * the client's address added to its `X-Forwarded-For`, its body buffered so that a node that refuses the
 * connection is skipped for the next one, as nginx's `proxy_next_upstream error` does; a response, a
 * stream included, is passed through as it comes.
 */
import { Agent, createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Balancer {
  readonly url: string;
  /** Which node took each request so far (its index), and the request's path. */
  readonly taken: Array<{ readonly node: number; readonly path: string }>;
  close(): Promise<void>;
}

/** Hop-by-hop headers are the connection's, not the message's: a proxy never forwards them (RFC 9110 7.6.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));
}

export async function startBalancer(upstreams: () => readonly string[]): Promise<Balancer> {
  let next = 0;
  // Connections to the nodes are kept and reused, as a balancer's are.
  const agent = new Agent({ keepAlive: true });
  const taken: Array<{ node: number; path: string }> = [];
  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      const nodes = upstreams();
      const forward = (tries: number): void => {
        const index = next++ % nodes.length;
        const target = new URL(incoming.url ?? '/', nodes[index]);
        // As nginx's `proxy_add_x_forwarded_for`: the client's address after any the client sent.
        const forwarded = [incoming.headers['x-forwarded-for'], incoming.socket.remoteAddress]
          .filter((part) => part !== undefined)
          .join(', ');
        const headers = { ...endToEnd(incoming.headers), host: target.host, 'x-forwarded-for': forwarded };
        const upstream = request(target, { method: incoming.method, headers, agent }, (answer: IncomingMessage) => {
          taken.push({ node: index, path: target.pathname });
          outgoing.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
          answer.pipe(outgoing);
          // A client that leaves mid-answer (a stream) closes the node's side too; a finished answer's connection is the pool's again.
          outgoing.on('close', () => {
            if (!answer.complete) answer.destroy();
          });
          // A node that dies mid-answer cuts the client's connection too, as a balancer does.
          answer.on('close', () => {
            if (!answer.complete) outgoing.destroy();
          });
        });
        upstream.on('error', (error: NodeJS.ErrnoException) => {
          if (outgoing.headersSent) return void outgoing.destroy();
          // A node that is down, or a kept-alive connection the node closed as it was reused: the next node, as nginx does.
          const retryable = error.code === 'ECONNREFUSED' || (upstream.reusedSocket && error.code === 'ECONNRESET');
          if (retryable && tries + 1 < nodes.length) return forward(tries + 1);
          outgoing
            .writeHead(502, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: { code: 'bad_gateway', message: String(error) } }));
        });
        upstream.end(body);
      };
      forward(0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    taken,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        agent.destroy();
        server.close(() => resolve());
      }),
  };
}
