/**
 * The backend relay as the kit plays it for the plugin checks (spec 4.1, 6.1; PROTOCOL.md 6e): one
 * made-up integration on a loopback listener, whose job stream the plugin under test holds. A check
 * delivers jobs on it and cuts it; the kit keeps every request the plugin makes (heartbeats, `running`,
 * results) and answers as a backend of this release would.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Arrivals, listening } from './arrivals.js';
import { RuleBroken } from './check.js';

/** What the plugin sent: a heartbeat, a `running` or a result (`job_id` from the path). */
export interface PluginRequest {
  readonly kind: 'heartbeat' | 'running' | 'result' | 'stream';
  readonly job_id?: string;
  readonly authorization: string | undefined;
  readonly lastEventId?: string;
  readonly body: unknown;
}

/** A body the kit reads from a plugin: a result is at most 1 MiB (PROTOCOL.md 6.11); this leaves room. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Requests kept: a check looks at a few dozen. */
const MAX_KEPT = 10_000;

export class KitBackend {
  readonly integrationId = randomUUID();
  readonly relayToken = randomBytes(24).toString('base64url');
  readonly requests: PluginRequest[] = [];
  private readonly arrivals = new Arrivals();
  private stream: ServerResponse | undefined;
  private seq = 0;

  private constructor(
    private readonly server: Server,
    /** The backend's base URL, to give the plugin. */
    readonly url: string,
  ) {}

  static async listen(host = '127.0.0.1', port = 0): Promise<KitBackend> {
    const { server, origin } = await listening(host, port);
    const backend = new KitBackend(server, origin);
    server.on('request', (request, response) => backend.answer(request, response));
    return backend;
  }

  /** The requests that satisfy `enough`, once they do; a `RuleBroken` saying `what` after `ms`. */
  async until(enough: (requests: readonly PluginRequest[]) => boolean, ms: number, what: string): Promise<readonly PluginRequest[]> {
    await this.arrivals.until(
      () => enough(this.requests),
      ms,
      () => `no ${what} within ${ms} ms`,
    );
    return this.requests;
  }

  /** Whether the plugin's job stream is open now. */
  get streaming(): boolean {
    return this.stream !== undefined && !this.stream.destroyed;
  }

  /** Sends a job on the open stream as a frame with the next id (PROTOCOL.md 6e.1): its id. */
  deliver(job: Record<string, unknown>): string {
    if (this.stream === undefined || this.stream.destroyed) throw new RuleBroken('the plugin holds no job stream to deliver on');
    this.seq += 1;
    this.stream.write(`id: ${this.seq}\ndata: ${JSON.stringify(job)}\n\n`);
    return String(this.seq);
  }

  /** Cuts the job stream, as a network that drops. */
  cut(): void {
    this.stream?.destroy();
    this.stream = undefined;
  }

  close(): Promise<void> {
    this.cut();
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private keep(request: PluginRequest): void {
    if (this.requests.length < MAX_KEPT) this.requests.push(request);
    this.arrivals.arrived();
  }

  private answer(request: IncomingMessage, response: ServerResponse): void {
    const base = `/api/v1/assistant/integrations/${this.integrationId}`;
    const path = (request.url ?? '').split('?')[0]!;
    const authorization = request.headers.authorization;
    const send = (status: number, body: unknown) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (!path.startsWith(`${base}/`)) return void send(404, { error: { code: 'not_found', message: 'not this integration' } });
    if (authorization !== `Bearer ${this.relayToken}`) {
      this.keep({ kind: 'stream', authorization, body: undefined });
      return void send(401, { error: { code: 'unauthorized', message: 'the RELAY_TOKEN is wrong' } });
    }
    const rest = path.slice(base.length);
    if (request.method === 'GET' && rest === '/stream') {
      const lastEventId = request.headers['last-event-id'];
      this.keep({ kind: 'stream', authorization, body: undefined, ...(typeof lastEventId === 'string' ? { lastEventId } : {}) });
      // A new stream takes over (PROTOCOL.md 6e.1): the old one is cut.
      this.stream?.destroy();
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      response.write(': open\n\n');
      this.stream = response;
      response.on('close', () => {
        if (this.stream === response) this.stream = undefined;
      });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) request.destroy();
      else chunks.push(chunk);
    });
    request.on('end', () => {
      let body: unknown;
      try {
        body = chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return void send(400, { error: { code: 'invalid_json', message: 'not JSON' } });
      }
      const job = /^\/jobs\/([^/]+)\/(running|result)$/.exec(rest);
      if (request.method === 'POST' && rest === '/heartbeat') {
        this.keep({ kind: 'heartbeat', authorization, body });
        return void send(200, { ok: true, interval_s: 30, probe_requested: false });
      }
      if (request.method === 'POST' && job !== null) {
        this.keep({ kind: job[2] as 'running' | 'result', job_id: decodeURIComponent(job[1]!), authorization, body });
        return void send(200, { job_id: decodeURIComponent(job[1]!), state: job[2] === 'running' ? 'running' : 'completed' });
      }
      send(404, { error: { code: 'not_found', message: `${request.method} ${rest}` } });
    });
  }
}
