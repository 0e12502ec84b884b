/**
 * A bare TCP connection to a host on loopback, for what no HTTP client sends: an idle socket, bytes
 * trickled one at a time, oversized or malformed requests. Records every byte the host answers.
 */
import * as net from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';

export interface ParsedResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
}

export class RawSocket {
  /** Everything the host has sent, as text. */
  received = '';
  closed = false;
  private readonly socket: net.Socket;
  private trickling: NodeJS.Timeout | undefined;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (this.received += chunk));
    // A host that closes while we still send may reset the connection: that is a close too.
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      clearInterval(this.trickling);
    });
  }

  static connect(url: string): Promise<RawSocket> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => resolve(new RawSocket(socket)));
      socket.once('error', reject);
    });
  }

  /** Opens a connection, sends `bytes`, and resolves with the answer once the host has closed the connection. */
  static async exchange(url: string, bytes: string): Promise<ParsedResponse> {
    const socket = await RawSocket.connect(url);
    socket.write(bytes);
    await socket.untilClosed();
    return socket.response();
  }

  write(bytes: string): void {
    if (!this.closed) this.socket.write(bytes);
  }

  /** Sends `bytes` one character every `everyMs`, until they run out or the host closes the connection. */
  trickle(bytes: string, everyMs: number): void {
    let next = 0;
    this.trickling = setInterval(() => {
      if (next >= bytes.length) clearInterval(this.trickling);
      else this.write(bytes[next++]!);
    }, everyMs);
  }

  async untilClosed(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error(`the host did not close the connection; received ${JSON.stringify(this.received)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** The first answer received: its status, headers (names in lower case) and body. */
  response(): ParsedResponse {
    const end = this.received.indexOf('\r\n\r\n');
    if (end < 0) throw new Error(`no complete answer; received ${JSON.stringify(this.received)}`);
    const [statusLine, ...lines] = this.received.slice(0, end).split('\r\n');
    const headers: IncomingHttpHeaders = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const text = this.received.slice(end + 4);
    const length = Number(headers['content-length']);
    return { status: Number(statusLine!.split(' ')[1]), headers, text: Number.isNaN(length) ? text : text.slice(0, length) };
  }

  close(): void {
    clearInterval(this.trickling);
    this.socket.destroy();
  }
}
