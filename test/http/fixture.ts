/**
 * What the HTTP tests share: a host on loopback that records every committed engine event (so a test
 * can wait for a fact instead of sleeping), tracks the SSE connections it opens, and closes them all.
 */
import * as http from 'node:http';
import type { Socket } from 'node:net';
import { expect } from 'vitest';
import type { AssistantHostOptions, DomainEvent, TaskSessionView } from '../../index.js';
import { HTTP_ERRORS, type HttpErrorCode } from '../../protocol/index.js';
import { post, script, type JsonResponse } from '../support/http.js';
import { TOKEN, startHost, type TestHost } from '../support/host.js';
import { SseConnection, type OpenOptions } from '../support/sse.js';

export { TOKEN };

type Settled = Extract<DomainEvent, { type: 'task.settled' }>;

/** Polls `check` until it holds; the host runs in this process, so state changes between polls. */
export async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A short real wait, only to show that something does NOT happen: the host has had the time to act on
 * what it was given (loopback I/O, a commit). What must happen is waited for with `until`, never this.
 */
export function aMoment(): Promise<void> {
  return sleep(50);
}

export class Relay {
  /** Every event committed since the host started serving, in commit order. */
  readonly events: DomainEvent[] = [];
  private readonly streams: SseConnection[] = [];

  private constructor(readonly t: TestHost) {
    t.host.onEvent((event) => this.events.push(event));
  }

  static async start(options: Partial<AssistantHostOptions> & { dir?: string } = {}): Promise<Relay> {
    const relay = new Relay(await startHost(options));
    running.add(relay);
    return relay;
  }

  /**
   * Closes this host and keeps its folder, for a restart: `Relay.start({ dir })` opens the same log again,
   * and that host removes the folder when it stops.
   */
  async closeKeepingLog(): Promise<string> {
    this.closeStreams();
    running.delete(this);
    await this.t.close();
    return this.t.dir;
  }

  get url(): string {
    return this.t.url;
  }

  get db(): string {
    return this.t.db;
  }

  get epoch(): string {
    return this.t.host.epoch;
  }

  eventsUrl(sessionId: string): string {
    return `${this.url}/v1/events?session_id=${encodeURIComponent(sessionId)}`;
  }

  /** Opens `/v1/events` with the right token unless told otherwise; closed by `stop`. */
  async open(sessionId: string, options: OpenOptions = {}): Promise<SseConnection> {
    const stream = await SseConnection.open(this.eventsUrl(sessionId), { token: TOKEN, ...options });
    this.streams.push(stream);
    return stream;
  }

  /** Opens a stream and waits for `: open`, so the reader is registered before anything is posted. */
  async subscribe(sessionId: string, options: OpenOptions = {}): Promise<SseConnection> {
    const stream = await this.open(sessionId, options);
    expect(stream.status).toBe(200);
    await stream.until((c) => c.messages.length > 0, 10_000, ': open');
    return stream;
  }

  /** Opens a stream the host is expected to refuse, and returns its answer once the host has ended it. */
  async refused(sessionId: string): Promise<RawResponse> {
    const stream = await this.open(sessionId);
    await stream.untilEnded();
    return { status: stream.status, headers: stream.headers, text: stream.body };
  }

  post(body: unknown): Promise<JsonResponse> {
    return post(this.url, TOKEN, body);
  }

  /** Starts a task running `steps` with the script agent and checks the 202. */
  async turn(sessionId: string, taskId: string, ...steps: unknown[]): Promise<void> {
    const accepted = await this.post({ session_id: sessionId, task_id: taskId, text: script(...steps) });
    expect(accepted.status).toBe(202);
  }

  /** Waits until a task's terminal reply is committed (and so already handed to every live reader). */
  async settled(taskId: string): Promise<Settled> {
    const find = () => this.events.find((e): e is Settled => e.type === 'task.settled' && e.task_id === taskId);
    await until(() => find() !== undefined, `task.settled for ${taskId}`);
    return find()!;
  }

  count(type: DomainEvent['type'], taskId?: string): number {
    return this.events.filter((e) => e.type === type && (taskId === undefined || ('task_id' in e && e.task_id === taskId))).length;
  }

  readers(sessionId: string): number {
    return this.t.host.session(sessionId) === undefined ? 0 : this.taskSession(sessionId).readers;
  }

  /** The host's view of a Form A session (fails the test for a Form B one or an unknown one). */
  taskSession(sessionId: string): TaskSessionView {
    const view = this.t.host.session(sessionId);
    if (view?.form !== 'A') throw new Error(`${sessionId} is not a Form A session`);
    return view;
  }

  /**
   * The server's end of the next `/v1/events` connection. Its unsent byte count is the one way to know,
   * without timing guesses, that a paused client has really filled the kernel buffers.
   */
  nextEventsSocket(): Promise<Socket> {
    const server = this.t.host.server.server;
    return new Promise((resolve) => {
      const onRequest = (request: http.IncomingMessage) => {
        if (!request.url?.startsWith('/v1/events')) return;
        server.off('request', onRequest);
        resolve(request.socket);
      };
      server.on('request', onRequest);
    });
  }

  async stop(): Promise<void> {
    this.closeStreams();
    running.delete(this);
    await this.t.cleanup();
  }

  private closeStreams(): void {
    for (const stream of this.streams) stream.close();
  }
}

const running = new Set<Relay>();

/** For `afterEach`: stops every host a test started, even when the test failed half way. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((relay) => relay.stop()));
}

/** The id a stream frame carries for `seq` in this session (epoch and generation as the host reports them). */
export function idOf(relay: Relay, sessionId: string, seq: number): string {
  return `${relay.epoch}:${relay.taskSession(sessionId).generation}:${seq}`;
}

export interface RawResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
}

/** A request exactly as given (no default content type, any method, repeated headers), for bad-input cases. */
export function rawRequest(url: string, init: { method: string; headers?: http.OutgoingHttpHeaders; body?: string }): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method, headers: init.headers ?? {}, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** Checks an answer is the catalogue's error `code`, with its status, content type and message. */
export function expectError(response: RawResponse, code: HttpErrorCode): void {
  expect(response.status).toBe(HTTP_ERRORS[code].status);
  expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(JSON.parse(response.text)).toEqual({ error: { code, message: HTTP_ERRORS[code].message } });
}
