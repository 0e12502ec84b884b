/**
 * The backend relay as the kit plays it for the plugin checks (spec 4.1, 6.1; PROTOCOL.md 6e): one
 * made-up integration on a loopback listener, whose job stream the plugin under test holds. A check
 * delivers jobs on it and cuts it; the kit keeps every request the plugin makes (heartbeats, `running`,
 * results) and answers as a backend of this release would; for a paired plugin, it is the pairing's
 * backend and client too (kit-pairing.ts).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Arrivals, bodyText, listening, parsedOrUndefined } from './arrivals.js';
import { RuleBroken } from './check.js';
import { KitPairing } from './kit-pairing.js';

/** What the plugin sent: a heartbeat, a `running` or a result (`job_id` from the path). */
export interface PluginRequest {
  readonly kind: 'heartbeat' | 'running' | 'result' | 'stream';
  readonly job_id?: string;
  readonly authorization: string | undefined;
  readonly lastEventId?: string;
  readonly body: unknown;
  /** Its token was not the RELAY_TOKEN: answered 401. */
  readonly refused?: boolean;
}

/** A body the kit reads from a plugin: a result is at most 1 MiB (PROTOCOL.md 6.11); this leaves room. */
const MAX_BODY_BYTES = 2 * 1024 * 1024;
/** Requests kept, and the bytes of their bodies: a check looks at a few dozen small ones. Past either, no more are kept. */
const MAX_KEPT = 1_000;
const MAX_KEPT_BYTES = 64 * 1024 * 1024;

export class KitBackend {
  readonly integrationId = randomUUID();
  readonly relayToken = randomBytes(24).toString('base64url');
  readonly requests: PluginRequest[] = [];
  private readonly arrivals = new Arrivals();
  private stream: ServerResponse | undefined;
  private keptBytes = 0;
  /** The pairing the plugin joins, when it is checked as a paired plugin (BYO). */
  pairing: KitPairing | undefined;
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

  /** Makes the pairing the plugin will join by its code (PROTOCOL.md 7.6): this integration's, once it completes. */
  pair(providerKind: string): KitPairing {
    this.pairing = new KitPairing(providerKind, { integration_id: this.integrationId, relay_token: this.relayToken });
    return this.pairing;
  }

  /** Whether the plugin's job stream is open now. */
  get streaming(): boolean {
    return this.stream !== undefined && !this.stream.destroyed;
  }

  /** Sends a job on the open stream as a frame with the next id (PROTOCOL.md 6e.1). */
  deliver(job: Record<string, unknown>): void {
    if (this.stream === undefined || this.stream.destroyed) throw new RuleBroken('the plugin holds no job stream to deliver on');
    this.seq += 1;
    this.stream.write(`id: ${this.seq}\ndata: ${JSON.stringify(job)}\n\n`);
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

  private keep(request: PluginRequest, bytes = 0): void {
    this.keptBytes += bytes;
    if (this.requests.length < MAX_KEPT && this.keptBytes <= MAX_KEPT_BYTES) this.requests.push(request);
    this.arrivals.arrived();
  }

  private answer(request: IncomingMessage, response: ServerResponse): void {
    const base = `/api/v1/assistant/integrations/${this.integrationId}`;
    const path = (request.url ?? '').split('?')[0]!;
    const authorization = request.headers.authorization;
    const send = (status: number, body: unknown) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const pairing = this.pairing;
    if (pairing !== undefined && path.startsWith(PAIRINGS))
      return readBody(request, send, (body) => {
        const answered = pairing.answer(request.method ?? '', path.slice(PAIRINGS.length), authorization, body);
        send(answered.status, answered.body);
        this.arrivals.arrived();
      });
    if (!path.startsWith(`${base}/`)) return void send(404, { error: { code: 'not_found', message: 'not this integration' } });
    const rest = path.slice(base.length);
    if (authorization !== `Bearer ${this.relayToken}`) {
      this.keep({ kind: kindOf(rest), authorization, body: undefined, refused: true });
      return void send(401, { error: { code: 'unauthorized', message: 'the RELAY_TOKEN is wrong' } });
    }
    if (request.method === 'GET' && rest === '/stream') return this.open(request, response, authorization);
    readBody(request, send, (body, bytes) => {
      const job = /^\/jobs\/([^/]+)\/(running|result)$/.exec(rest);
      if (request.method === 'POST' && rest === '/heartbeat') {
        this.keep({ kind: 'heartbeat', authorization, body }, bytes);
        return send(200, { ok: true, interval_s: 30, probe_requested: false });
      }
      if (request.method === 'POST' && job !== null) {
        const job_id = decodedOrUndefined(job[1]!);
        if (job_id === undefined) return send(400, { error: { code: 'invalid_job_id', message: 'not a percent-encoded id' } });
        this.keep({ kind: job[2] as 'running' | 'result', job_id, authorization, body }, bytes);
        return send(200, { job_id, state: job[2] === 'running' ? 'running' : 'completed' });
      }
      send(404, { error: { code: 'not_found', message: `${request.method} ${rest}` } });
    });
  }

  /** The plugin's job stream: a new one takes over (PROTOCOL.md 6e.1), the old one is cut. */
  private open(request: IncomingMessage, response: ServerResponse, authorization: string): void {
    const lastEventId = request.headers['last-event-id'];
    this.keep({ kind: 'stream', authorization, body: undefined, ...(typeof lastEventId === 'string' ? { lastEventId } : {}) });
    this.stream?.destroy();
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    response.write(': open\n\n');
    this.stream = response;
    response.on('close', () => {
      if (this.stream === response) this.stream = undefined;
    });
  }
}

const PAIRINGS = '/api/v1/pairings';

/** What a request under the integration is, by its path (kept as such even when its token is refused). */
function kindOf(rest: string): PluginRequest['kind'] {
  if (rest === '/heartbeat') return 'heartbeat';
  const job = /^\/jobs\/[^/]+\/(running|result)$/.exec(rest);
  return job === null ? 'stream' : (job[1] as 'running' | 'result');
}

/** A path segment decoded; `undefined` for one that is not valid percent-encoding. */
function decodedOrUndefined(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** A request's body, parsed as JSON (`undefined` when empty) and bounded; one that is not JSON is answered 400. */
function readBody(
  request: IncomingMessage,
  send: (status: number, body: unknown) => void,
  then: (body: unknown, bytes: number) => void,
): void {
  bodyText(request, MAX_BODY_BYTES, (text) => {
    const body = text === '' ? undefined : parsedOrUndefined(text);
    if (text !== '' && body === undefined) return send(400, { error: { code: 'invalid_json', message: 'not JSON' } });
    then(body, text.length);
  });
}
