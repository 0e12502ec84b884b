/**
 * A real SSE client over a raw HTTP connection, for tests: parses frames (id, event, data) and comments
 * exactly as they arrive, can pause reading (a slow reader), and resumes with Last-Event-ID.
 */
import * as http from 'node:http';

export interface SseFrame {
  readonly id?: string;
  readonly event?: string;
  readonly data: string;
}

export interface SseMessage {
  readonly kind: 'comment' | 'frame';
  readonly comment?: string;
  readonly frame?: SseFrame;
}

export interface OpenOptions {
  readonly token?: string;
  readonly lastEventId?: string;
  readonly headers?: Record<string, string>;
}

export class SseConnection {
  readonly messages: SseMessage[] = [];
  status = 0;
  headers: http.IncomingHttpHeaders = {};
  /** The body of a non-200 answer. */
  body = '';
  ended = false;
  /** The response ended as HTTP ends one (its last chunk came), rather than being cut. */
  complete = false;
  private buffer = '';
  private waiters: Array<() => void> = [];
  private request: http.ClientRequest | undefined;
  private response: http.IncomingMessage | undefined;

  get frames(): SseFrame[] {
    return this.messages.flatMap((m) => (m.frame ? [m.frame] : []));
  }

  get comments(): string[] {
    return this.messages.flatMap((m) => (m.comment !== undefined ? [m.comment] : []));
  }

  /** Frames that carry an id: the terminal replies. */
  get replies(): Array<SseFrame & { json: Record<string, unknown> }> {
    return this.frames.filter((f) => f.id !== undefined).map((f) => ({ ...f, json: JSON.parse(f.data) }));
  }

  get lastId(): string | undefined {
    return this.frames.filter((f) => f.id !== undefined).at(-1)?.id;
  }

  static open(url: string, options: OpenOptions = {}): Promise<SseConnection> {
    const connection = new SseConnection();
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { accept: 'text/event-stream', ...options.headers };
      if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
      if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
      const request = http.get(url, { headers, agent: false }, (response) => {
        connection.response = response;
        connection.status = response.statusCode ?? 0;
        connection.headers = response.headers;
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          if (connection.status === 200) connection.feed(chunk);
          else connection.body += chunk;
          connection.wake();
        });
        response.on('end', () => {
          connection.ended = true;
          connection.complete = true;
          connection.wake();
        });
        response.on('close', () => {
          connection.ended = true;
          connection.wake();
        });
        resolve(connection);
      });
      connection.request = request;
      request.on('error', (error) => {
        connection.ended = true;
        connection.wake();
        if (connection.response === undefined) reject(error);
      });
    });
  }

  private feed(chunk: string): void {
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const frame: { id?: string; event?: string; data: string[] } = { data: [] };
      let isFrame = false;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          this.messages.push({ kind: 'comment', comment: line.slice(1).trim() });
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        isFrame = true;
        if (field === 'id') frame.id = value;
        else if (field === 'event') frame.event = value;
        else if (field === 'data') frame.data.push(value);
      }
      if (isFrame) {
        this.messages.push({
          kind: 'frame',
          frame: {
            ...(frame.id !== undefined ? { id: frame.id } : {}),
            ...(frame.event !== undefined ? { event: frame.event } : {}),
            data: frame.data.join('\n'),
          },
        });
      }
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Waits until `predicate` holds (checked on every chunk), or fails after `timeoutMs`. */
  async until(predicate: (c: SseConnection) => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      if (this.ended && !predicate(this)) {
        // One last look: the end may have come with the data we wait for.
        if (predicate(this)) return;
        throw new Error(`stream ended before ${what}; got ${JSON.stringify(this.messages).slice(0, 2000)}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.messages).slice(0, 2000)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 250));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  untilReplies(n: number, timeoutMs?: number): Promise<void> {
    return this.until((c) => c.replies.length >= n, timeoutMs, `${n} replies`);
  }

  untilEnded(timeoutMs?: number): Promise<void> {
    return this.until((c) => c.ended, timeoutMs, 'end of stream');
  }

  /** Stops reading: the kernel buffers fill and the server sees a slow reader. */
  pause(): void {
    this.response?.socket.pause();
    this.response?.pause();
  }

  resume(): void {
    this.response?.socket.resume();
    this.response?.resume();
  }

  close(): void {
    this.request?.destroy();
    this.response?.destroy();
  }
}
