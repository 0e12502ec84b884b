/**
 * A fake backend relay on loopback that speaks exactly the plugin's side of the contract (PROTOCOL.md
 * 6d): the job stream, heartbeats, `running` and `result`. Tests script its answers and read what it got.
 */
import { randomUUID } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { jsonSchemaOf, LiveAnalysisResult, type HeartbeatAnswer } from '../../protocol/index.js';

export const RELAY_TOKEN = 'relay-token-for-tests';
export const INTEGRATION = 'integration-1';

/** A scripted answer: a status (with `Retry-After` seconds), or `hang` (never answered). */
export type Scripted = { status: number; retryAfter?: number; body?: unknown } | 'hang';

export interface Received {
  readonly job_id: string;
  readonly body: Record<string, unknown>;
}

export class FakeBackend {
  /** Each stream request: its `Last-Event-ID`, and the status it was answered. */
  readonly connects: Array<{ lastEventId: string | undefined; status: number }> = [];
  readonly heartbeats: Array<Record<string, unknown>> = [];
  readonly running: string[] = [];
  readonly results: Received[] = [];
  /** Answers for the next stream requests, in order; once used up, streams open. */
  readonly streamAnswers: Scripted[] = [];
  heartbeatAnswer: HeartbeatAnswer = { ok: true, interval_s: 30, probe_requested: false };
  /** Answers for the next heartbeats, in order; once used up, `heartbeatAnswer`. */
  readonly heartbeatAnswers: Scripted[] = [];
  /** Status for `running` by job (default 200). */
  readonly runningAnswers = new Map<string, number>();
  /** Answers for each job's result POSTs, in order (default 200). */
  readonly resultAnswers = new Map<string, Scripted[]>();
  /** While set, every `running` and `result` POST waits in `held` until the test answers it. */
  hold = false;
  readonly held: Array<{ readonly job_id: string; readonly route: 'running' | 'result'; answer(scripted: Scripted): void }> = [];
  private readonly live = new Set<http.ServerResponse>();
  private cursor = 0;
  private waiters: Array<() => void> = [];

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeBackend> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const backend = new FakeBackend(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('request', (req, res) => backend.handle(req, res));
    return backend;
  }

  /** Streams open now. */
  get streams(): number {
    return this.live.size;
  }

  /** Sends a job on every open stream, with the next cursor as its id; returns the cursor. */
  send(job: Record<string, unknown>): string {
    const id = String(++this.cursor);
    for (const res of this.live) res.write(`id: ${id}\ndata: ${JSON.stringify(job)}\n\n`);
    return id;
  }

  /** As `send`, but the frame's bytes go out in two writes some time apart, split inside a character `at` the given text. */
  async sendSplit(job: Record<string, unknown>, at: string): Promise<string> {
    const id = String(++this.cursor);
    const frame = Buffer.from(`id: ${id}\ndata: ${JSON.stringify(job)}\n\n`);
    const cut = frame.indexOf(Buffer.from(at)) + 1;
    for (const res of this.live) res.write(frame.subarray(0, cut));
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (const res of this.live) res.write(frame.subarray(cut));
    return id;
  }

  /** Drops every open stream, as a backend restart or a network cut would. */
  drop(): void {
    for (const res of this.live) res.destroy();
    this.live.clear();
  }

  /** Tells every open stream that another took over, and ends it. */
  supersede(): void {
    for (const res of this.live) res.end('event: superseded\ndata: {"type":"superseded"}\n\n');
    this.live.clear();
  }

  resultsOf(job_id: string): Array<Record<string, unknown>> {
    return this.results.filter((r) => r.job_id === job_id).map((r) => r.body);
  }

  /** Waits (in real time) until `predicate` holds, re-checked on every request and every 20 ms. */
  async until(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 20);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async close(): Promise<void> {
    this.drop();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      this.route(req, res, Buffer.concat(chunks).toString('utf8'));
      const waiters = this.waiters;
      this.waiters = [];
      for (const wake of waiters) wake();
    });
  }

  private route(req: http.IncomingMessage, res: http.ServerResponse, text: string): void {
    const base = `/api/v1/assistant/integrations/${INTEGRATION}`;
    const path = req.url ?? '';
    if (req.headers.authorization !== `Bearer ${RELAY_TOKEN}`)
      return answer(res, { status: 401, body: { error: { code: 'unauthorized', message: 'bad token' } } });
    if (req.method === 'GET' && path === `${base}/stream`) return this.stream(req, res);
    const body = text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {};
    if (req.method === 'POST' && path === `${base}/heartbeat`) {
      this.heartbeats.push(body);
      return answer(res, this.heartbeatAnswers.shift() ?? { status: 200, body: this.heartbeatAnswer });
    }
    const job = /^\/jobs\/([^/]+)\/(running|result)$/.exec(path.slice(base.length));
    if (req.method === 'POST' && job !== null) {
      const job_id = decodeURIComponent(job[1]!);
      if (this.hold) {
        if (job[2] === 'running') this.running.push(job_id);
        else this.results.push({ job_id, body });
        this.held.push({ job_id, route: job[2] as 'running' | 'result', answer: (scripted) => answer(res, scripted) });
        return;
      }
      if (job[2] === 'running') {
        this.running.push(job_id);
        const status = this.runningAnswers.get(job_id) ?? 200;
        return answer(res, { status, body: status === 200 ? { ok: true } : { error: { code: 'job_settled', message: 'the job ended' } } });
      }
      this.results.push({ job_id, body });
      return answer(res, this.resultAnswers.get(job_id)?.shift() ?? { status: 200, body: { ok: true } });
    }
    answer(res, { status: 404, body: { error: { code: 'not_found', message: 'no such route' } } });
  }

  private stream(req: http.IncomingMessage, res: http.ServerResponse): void {
    const lastEventId = req.headers['last-event-id'] as string | undefined;
    const scripted = this.streamAnswers.shift();
    if (scripted !== undefined) {
      this.connects.push({ lastEventId, status: scripted === 'hang' ? 0 : scripted.status });
      return answer(res, scripted);
    }
    this.connects.push({ lastEventId, status: 200 });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(': open\n\n');
    this.live.add(res);
    res.on('close', () => this.live.delete(res));
  }
}

function answer(res: http.ServerResponse, scripted: Scripted): void {
  if (scripted === 'hang') return;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (scripted.retryAfter !== undefined) headers['retry-after'] = String(scripted.retryAfter);
  res
    .writeHead(scripted.status, headers)
    .end(JSON.stringify(scripted.body ?? (scripted.status === 200 ? { ok: true } : { error: { code: 'scripted', message: 'scripted' } })));
}

/** A live_analysis job due `deadlineMs` after `now`; `overrides` replace any field. */
export function makeJob(now: number, overrides: Record<string, unknown> = {}, deadlineMs = 30_000): Record<string, unknown> {
  return {
    event_type: 'reasoning_job',
    job_id: randomUUID(),
    purpose: 'live_analysis',
    deadline_at: new Date(now + deadlineMs).toISOString(),
    schema_version: 1,
    envelope_version: 1,
    response_schema: jsonSchemaOf(LiveAnalysisResult),
    payload: { session_id: 's1', transcript: [{ speaker: 'a', text: 'hello' }] },
    byo: false,
    provider_kind: 'test-provider',
    ...overrides,
  };
}
