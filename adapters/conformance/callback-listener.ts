/**
 * The client's side of Form B as the kit plays it (spec 4.3): a loopback listener that the host under
 * test POSTs replies to. It keeps what arrived for each check's own path (one callback URL a check, so
 * checks never see each other's replies) and answers as the check says: 200 by default, or a status it
 * chose for the next attempts, to see which the host retries.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Arrivals, bodyText, listening, parsedOrUndefined } from './arrivals.js';

export interface CallbackPost {
  /** The path under the callback's own (`/tasks/{task_id}`). */
  readonly path: string;
  readonly method: string;
  readonly authorization: string | undefined;
  readonly body: unknown;
  readonly text: string;
  /** ms since the callback was made. */
  readonly at: number;
}

/** A body the kit reads from a host: a reply is at most 256 KiB (spec 8); this leaves room. */
const MAX_BODY_BYTES = 1024 * 1024;
/** Deliveries one callback keeps, and the bytes of their bodies: a check sees a handful. Past either, no more are kept. */
const MAX_KEPT = 1_000;
const MAX_KEPT_BYTES = 16 * 1024 * 1024;

/** One check's callback URL, what arrived at it, and how it answers. */
export class Callback {
  readonly deliveries: CallbackPost[] = [];
  /** Statuses for the next `message` POSTs, in order; then 200. Other statuses (`typing`) are always answered 200. */
  readonly answers: number[] = [];
  private readonly arrivals = new Arrivals();
  private readonly made = performance.now();
  private keptBytes = 0;

  constructor(
    readonly url: string,
    readonly token: string,
  ) {}

  /** The deliveries that satisfy `enough`, once they do; a `RuleBroken` saying `what` after `ms`. */
  async until(enough: (deliveries: readonly CallbackPost[]) => boolean, ms: number, what: string): Promise<readonly CallbackPost[]> {
    await this.arrivals.until(
      () => enough(this.deliveries),
      ms,
      () => `${what}: ${this.deliveries.length} POSTs arrived within ${ms} ms`,
    );
    return this.deliveries;
  }

  /** Called by the listener: keeps it, and says what to answer. */
  received(delivery: Omit<CallbackPost, 'at'>): number {
    this.keptBytes += delivery.text.length;
    if (this.deliveries.length < MAX_KEPT && this.keptBytes <= MAX_KEPT_BYTES)
      this.deliveries.push({ ...delivery, at: performance.now() - this.made });
    this.arrivals.arrived();
    const isMessage = (delivery.body as { status?: unknown } | undefined)?.status === 'message';
    return (isMessage ? this.answers.shift() : undefined) ?? 200;
  }
}

export class CallbackListener {
  private readonly callbacks = new Map<string, Callback>();

  private constructor(
    private readonly server: Server,
    readonly origin: string,
  ) {}

  static async listen(host = '127.0.0.1', port = 0): Promise<CallbackListener> {
    const { server, origin } = await listening(host, port);
    const listener = new CallbackListener(server, origin);
    server.on('request', (request, response) => listener.answer(request, response));
    return listener;
  }

  /** A fresh callback URL and token, for one check. */
  callback(): Callback {
    const id = randomUUID();
    const callback = new Callback(`${this.origin}/kit/${id}`, `kit-${randomUUID()}`);
    this.callbacks.set(id, callback);
    return callback;
  }

  forget(callback: Callback): void {
    this.callbacks.delete(callback.url.slice(`${this.origin}/kit/`.length));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private answer(request: IncomingMessage, response: ServerResponse): void {
    const match = /^\/kit\/([0-9a-f-]{36})(\/.*)?$/.exec(request.url ?? '');
    const callback = match === null ? undefined : this.callbacks.get(match[1]!);
    bodyText(request, MAX_BODY_BYTES, (text) => {
      if (callback === undefined) {
        response.writeHead(404).end();
        return;
      }
      const body = parsedOrUndefined(text);
      const status = callback.received({
        path: match![2] ?? '/',
        method: request.method ?? '',
        authorization: request.headers.authorization,
        body,
        text,
      });
      // A redirect names a place the host must not go: this listener, where the kit would see it.
      const headers = status >= 300 && status < 400 ? { location: `${callback.url}/redirected` } : {};
      response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(status < 300 ? '{"ok":true}' : '{}');
    });
  }
}
