/**
 * One HTTP/1.1 exchange written byte for byte, for requests no HTTP client would send (a malformed path,
 * duplicate or odd headers, a body that is not UTF-8): the request goes out on a fresh loopback
 * connection with `Connection: close`, and the answer is read until the server closes, or, for an
 * accepted event stream, until its headers are in.
 */
import * as net from 'node:net';

export interface WireRequest {
  readonly method: string;
  /** The request target as sent: path and query, not encoded any further. */
  readonly target: string;
  /** In order; a name may repeat. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body?: Buffer;
  /** Send the body in chunks (`Transfer-Encoding: chunked`) instead of with a `Content-Length`. */
  readonly chunked?: boolean;
}

export interface WireResponse {
  readonly status: number;
  /** Names in lower case; a repeated header keeps its last value. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** The answer was an event stream, cut after its headers. */
  readonly stream: boolean;
}

/** The bytes of `request`, as `exchange` sends them (also what a failing case prints). */
export function encode(request: WireRequest): Buffer {
  const head = [
    `${request.method} ${request.target} HTTP/1.1`,
    ...request.headers.map(([name, value]) => `${name}: ${value}`),
    'connection: close',
  ];
  const body = request.body;
  if (body === undefined) return Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1');
  if (request.chunked) {
    const half = Math.ceil(body.length / 2);
    const chunks = [body.subarray(0, half), body.subarray(half)].filter((chunk) => chunk.length > 0);
    const parts = chunks.flatMap((chunk) => [Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
    return Buffer.concat([
      Buffer.from(`${[...head, 'transfer-encoding: chunked'].join('\r\n')}\r\n\r\n`, 'latin1'),
      ...parts,
      Buffer.from('0\r\n\r\n'),
    ]);
  }
  return Buffer.concat([Buffer.from(`${[...head, `content-length: ${body.length}`].join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

function parseHead(head: string): { status: number; headers: Record<string, string> } {
  const [statusLine = '', ...lines] = head.split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  if (!Number.isInteger(status)) throw new Error(`not an HTTP status line: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status, headers };
}

function dechunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    if (eol < 0) break;
    const size = parseInt(body.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(body.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/** Sends `request` to `url`'s host and port and reads the answer; rejects if none comes within `timeoutMs`. */
export function exchange(url: string, request: WireRequest, timeoutMs = 10_000): Promise<WireResponse> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const received: Buffer[] = [];
    let settled = false;
    const finish = (outcome: () => WireResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      try {
        resolve(outcome());
      } catch (error) {
        reject(error);
      }
    };
    const timer = setTimeout(() => {
      settled = true;
      socket.destroy();
      reject(
        new Error(`no answer within ${timeoutMs} ms; received ${JSON.stringify(Buffer.concat(received).toString('latin1').slice(0, 500))}`),
      );
    }, timeoutMs);
    const answer = (): WireResponse => {
      const all = Buffer.concat(received);
      const end = all.indexOf('\r\n\r\n');
      if (end < 0)
        throw new Error(`the server closed without a complete answer; received ${JSON.stringify(all.toString('latin1').slice(0, 500))}`);
      const { status, headers } = parseHead(all.subarray(0, end).toString('latin1'));
      const raw = all.subarray(end + 4);
      const stream = (headers['content-type'] ?? '').startsWith('text/event-stream');
      const body = headers['transfer-encoding'] === 'chunked' && !stream ? dechunk(raw) : raw;
      return { status, headers, body: body.toString('utf8'), stream };
    };
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      // An accepted stream stays open: its headers say all this needs.
      const all = Buffer.concat(received);
      const end = all.indexOf('\r\n\r\n');
      if (end >= 0 && /\r\ncontent-type: text\/event-stream/i.test(all.subarray(0, end).toString('latin1'))) finish(answer);
    });
    // A server that answers early (a 413, a 400 from the parser) may reset the rest of the upload.
    socket.on('error', () => {});
    socket.on('close', () => finish(answer));
    socket.write(encode(request));
  });
}
