/**
 * Bench peer: clients for the MCP echo turn against bench/peers/mcp-server.ts.
 *
 * - `sdkClient`: the SDK's Client + StreamableHTTPClientTransport, `callTool` with `onprogress`.
 * - `minimalClient`: the same wire by hand over node:http, light enough to be the load generator.
 * - `openIdleStream`: a fresh session's standalone GET SSE stream, held open and idle.
 * - `awayAndBack`: tools/call streams dropped at their priming event, then resumed with `Last-Event-ID`.
 */
import * as http from 'node:http';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { AwayAndBack, OpenSession, Resumed, TurnResult } from '../clients/turn.js';

const MCP_PATH = '/mcp';
/** What the minimal client offers in `initialize`; the server's answer is what later requests carry. */
const PROTOCOL_VERSION = '2025-11-25';

/** The first text content of a tools/call result, if any. */
function replyText(result: unknown): string | undefined {
  if (typeof result !== 'object' || result === null || !('content' in result) || !Array.isArray(result.content)) return undefined;
  const first: unknown = result.content[0];
  if (typeof first !== 'object' || first === null || !('type' in first) || first.type !== 'text' || !('text' in first)) return undefined;
  return typeof first.text === 'string' ? first.text : undefined;
}

function checkEcho(sent: string, text: string | undefined): asserts text is string {
  if (text !== sent) throw new Error(`echo mismatch: sent ${JSON.stringify(sent)}, got ${JSON.stringify(text)}`);
}

function verify(sent: string, progress: number, text: string | undefined): TurnResult {
  checkEcho(sent, text);
  if (progress !== 1) throw new Error(`expected exactly 1 progress notification, saw ${progress}`);
  return { progress, text };
}

export const sdkClient: OpenSession = async (base, index) => {
  const client = new Client({ name: `bench-sdk-${index}`, version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(MCP_PATH, base));
  await client.connect(transport);
  return {
    async turn(text) {
      let progress = 0;
      const result = await client.callTool({ name: 'echo', arguments: { text } }, undefined, {
        onprogress: () => {
          progress += 1;
        },
      });
      return verify(text, progress, replyText(result));
    },
    async close() {
      // DELETE first: close() aborts the transport's signal, which later requests would carry.
      await transport.terminateSession();
      await client.close();
    },
  };
};

/** One keep-alive pool for every minimal-client request in the process. */
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

interface Target {
  readonly hostname: string;
  readonly port: number;
}

interface Session {
  readonly target: Target;
  readonly sessionId: string;
  readonly protocolVersion: string;
}

/** The fields of a JSON-RPC message the minimal client looks at. */
interface RpcMessage {
  readonly id?: unknown;
  readonly method?: unknown;
  readonly params?: { readonly progressToken?: unknown };
  readonly result?: unknown;
  readonly error?: { readonly code?: unknown; readonly message?: unknown };
}

function targetOf(base: string): Target {
  const url = new URL(base);
  return { hostname: url.hostname, port: Number(url.port || 80) };
}

/** Sends a request and resolves with the response once its headers arrive; `signal` aborts both request and response. */
function send(
  target: Target,
  method: string,
  headers: http.OutgoingHttpHeaders,
  body?: string,
  signal?: AbortSignal,
): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.request({ agent, hostname: target.hostname, port: target.port, path: MCP_PATH, method, headers, signal }, resolve);
    req.on('error', reject);
    req.end(body);
  });
}

function sessionHeaders(session: Session): http.OutgoingHttpHeaders {
  return { 'mcp-session-id': session.sessionId, 'mcp-protocol-version': session.protocolVersion };
}

function postHeaders(session: Session | undefined, body: string): http.OutgoingHttpHeaders {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'content-length': Buffer.byteLength(body),
    ...(session === undefined ? {} : sessionHeaders(session)),
  };
}

/** Reads an unexpected response's body and rejects with it. */
function failure(res: http.IncomingMessage, what: string): Promise<never> {
  return new Promise((_, reject) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      text += chunk;
    });
    res.on('error', () => reject(new Error(`${what}: HTTP ${res.statusCode}`)));
    res.on('end', () => reject(new Error(`${what}: HTTP ${res.statusCode} ${res.headers['content-type'] ?? ''} ${text.slice(0, 500)}`)));
  });
}

function isEventStream(res: http.IncomingMessage): boolean {
  return res.statusCode === 200 && (res.headers['content-type'] ?? '').startsWith('text/event-stream');
}

/** The data of one SSE event block, or undefined for blocks without data (priming events, comments). */
function eventData(block: string): string | undefined {
  let data: string | undefined;
  for (const line of block.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    data = data === undefined ? value : `${data}\n${value}`;
  }
  return data === '' ? undefined : data;
}

/**
 * Feeds each event's parsed message to `onMessage` until it returns true. The rest of the stream
 * is still read (and dropped) so the socket goes back to the pool when the server ends it.
 * Events are split on "\n\n": the SDK's server writes LF-only frames.
 */
function readMessages(res: http.IncomingMessage, onMessage: (message: RpcMessage) => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let settled = false;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      reject(error instanceof Error ? error : new Error(String(error)));
      res.destroy();
    };
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      if (settled) return;
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const data = eventData(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (data === undefined) continue;
        try {
          if (onMessage(JSON.parse(data) as RpcMessage)) {
            settled = true;
            resolve();
            return;
          }
        } catch (error) {
          fail(error);
          return;
        }
      }
    });
    res.on('error', fail);
    res.on('close', () => fail(new Error('SSE stream ended before the reply')));
  });
}

function rpcError(message: RpcMessage): Error {
  return new Error(`JSON-RPC error ${String(message.error?.code)}: ${String(message.error?.message)}`);
}

/** initialize, then notifications/initialized: what every session starts with. */
async function initialize(base: string, name: string, signal?: AbortSignal): Promise<Session> {
  const target = targetOf(base);
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name, version: '0.0.0' } },
  });
  const res = await send(target, 'POST', postHeaders(undefined, body), body, signal);
  const sessionId = res.headers['mcp-session-id'];
  if (!isEventStream(res) || typeof sessionId !== 'string') return failure(res, 'initialize');
  let protocolVersion: unknown;
  await readMessages(res, (message) => {
    if (message.id !== 0) return false;
    if (message.error !== undefined) throw rpcError(message);
    const result = message.result;
    protocolVersion = typeof result === 'object' && result !== null && 'protocolVersion' in result ? result.protocolVersion : undefined;
    return true;
  });
  if (typeof protocolVersion !== 'string') throw new Error('initialize: no protocolVersion in the result');
  const session: Session = { target, sessionId, protocolVersion };
  const note = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const ack = await send(target, 'POST', postHeaders(session, note), note, signal);
  if (ack.statusCode !== 202) return failure(ack, 'notifications/initialized');
  ack.resume();
  return session;
}

async function terminate(session: Session, signal?: AbortSignal): Promise<void> {
  const res = await send(session.target, 'DELETE', sessionHeaders(session), undefined, signal);
  if (res.statusCode !== 200) return failure(res, 'DELETE session');
  res.resume();
}

/** The echo tools/call as request `id`; its progressToken is the id too. */
function toolCall(id: number, text: string): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'echo', arguments: { text }, _meta: { progressToken: id } },
  });
}

/** Reads request `id`'s events up to its reply: the progress notifications seen before it, and its text. */
async function readEcho(res: http.IncomingMessage, id: number): Promise<{ progress: number; reply: string | undefined }> {
  let progress = 0;
  let reply: string | undefined;
  await readMessages(res, (message) => {
    if (message.method === 'notifications/progress') {
      if (message.params?.progressToken === id) progress += 1;
      return false;
    }
    if (message.id !== id) return false;
    if (message.error !== undefined) throw rpcError(message);
    reply = replyText(message.result);
    return true;
  });
  return { progress, reply };
}

async function echoTurn(session: Session, id: number, text: string, signal?: AbortSignal): Promise<TurnResult> {
  const body = toolCall(id, text);
  const res = await send(session.target, 'POST', postHeaders(session, body), body, signal);
  if (!isEventStream(res)) return failure(res, 'tools/call');
  const { progress, reply } = await readEcho(res, id);
  return verify(text, progress, reply);
}

export const minimalClient: OpenSession = async (base, index) => {
  const session = await initialize(base, `bench-minimal-${index}`);
  let lastId = 0;
  return {
    turn: (text) => echoTurn(session, ++lastId, text),
    close: () => terminate(session),
  };
};

/** Opens an idle stream for a fresh session (the standalone GET SSE stream of a session), resolves once its response headers arrive; the returned function closes it. */
export async function openIdleStream(base: string, index: number): Promise<() => void> {
  const session = await initialize(base, `bench-idle-${index}`);
  const res = await send(session.target, 'GET', { accept: 'text/event-stream', ...sessionHeaders(session) });
  if (!isEventStream(res)) return failure(res, 'GET stream');
  // Drained like a real listener would (the server's keep-alive comments); destroying the stream
  // below makes the response emit an abort error: expected, not a failure.
  res.resume();
  res.on('error', () => {});
  return () => {
    res.destroy();
    // The server keeps a session (transport + McpServer) until told otherwise; best effort, as
    // the closer is synchronous and a failure here says nothing about the stream.
    terminate(session).catch(() => {});
  };
}

/** The bound on every wait of `awayAndBack`; a dropped turn not back within it counts as lost. */
const WAIT_MS = 10_000;
/** Resume GETs the server is replaying at once. */
const RESUME_CONCURRENCY = 16;

/** A turn the client dropped: its request, and the id of its stream's priming event (the cursor it kept). */
interface Dropped {
  readonly id: number;
  readonly text: string;
  readonly cursor: string;
}

/**
 * Reads a tools/call response up to its first event, the priming event the server sends with an id and
 * no data, drops the connection and resolves with that id: all a client has of a stream it left.
 */
function primingId(res: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffer += chunk;
      const end = buffer.indexOf('\n\n');
      if (end < 0) return;
      const block = buffer.slice(0, end);
      const id = block.split('\n').find((line) => line.startsWith('id:'));
      // Settled before the destroy, so the 'close' it brings rejects nothing.
      if (id === undefined || eventData(block) !== undefined)
        reject(new Error(`tools/call: expected a priming event first, got ${JSON.stringify(block.slice(0, 200))}`));
      else resolve(id.charCodeAt(3) === 32 ? id.slice(4) : id.slice(3));
      res.destroy();
    });
    res.on('error', reject);
    res.on('close', () => reject(new Error('tools/call: stream ended before its priming event')));
  });
}

/** A counting semaphore: `acquire` resolves once one of `size` places is free. */
function places(size: number): { acquire(): Promise<void>; release(): void } {
  let free = size;
  const waiting: Array<() => void> = [];
  return {
    acquire() {
      if (free === 0) return new Promise((resolve) => waiting.push(resolve));
      free -= 1;
      return Promise.resolve();
    },
    release() {
      const next = waiting.shift();
      if (next === undefined) free += 1;
      else next();
    },
  };
}

async function awayAndBackOn(session: Session, away: number): Promise<Resumed> {
  await echoTurn(session, 1, 'before leaving', AbortSignal.timeout(WAIT_MS));
  const dropped: Dropped[] = [];
  for (let n = 1; n <= away; n += 1) {
    const id = n + 1;
    const text = `while away ${n} ✓`;
    const body = toolCall(id, text);
    const res = await send(session.target, 'POST', postHeaders(session, body), body, AbortSignal.timeout(WAIT_MS));
    if (!isEventStream(res)) return failure(res, 'tools/call');
    dropped.push({ id, text, cursor: await primingId(res) });
  }

  const replaying = places(RESUME_CONCURRENCY);
  let bytes = 0;
  const started = performance.now();
  let lastRead = started;
  /** Whether turn's result came back, and the progress seen before it (an SDK Client drops progress that follows its result). */
  const resume = async (turn: Dropped): Promise<{ result: boolean; progress: number }> => {
    await replaying.acquire();
    const signal = AbortSignal.timeout(WAIT_MS);
    let res: http.IncomingMessage;
    try {
      res = await send(
        session.target,
        'GET',
        { accept: 'text/event-stream', 'last-event-id': turn.cursor, ...sessionHeaders(session) },
        undefined,
        signal,
      );
    } catch (error) {
      if (signal.aborted) return { result: false, progress: 0 };
      throw error;
    } finally {
      // The replay is written before the response head: once it is here, the server is done with this GET.
      replaying.release();
    }
    if (!isEventStream(res)) return failure(res, 'GET resume');
    const reading = readEcho(res, turn.id);
    res.on('data', (chunk: string) => {
      bytes += Buffer.byteLength(chunk);
      lastRead = performance.now();
    });
    try {
      const { progress, reply } = await reading;
      checkEcho(turn.text, reply);
      if (progress > 1) throw new Error(`request ${turn.id}: ${progress} progress notifications replayed, expected 1`);
      return { result: true, progress };
    } catch (error) {
      if (signal.aborted) return { result: false, progress: 0 };
      throw error;
    } finally {
      // After the replay the server keeps the stream open for live events: closing it is the client's part.
      res.destroy();
    }
  };
  const outcomes = await Promise.all(dropped.map(resume));
  return {
    catchUpMs: lastRead - started,
    bytes,
    replayed: outcomes.filter((outcome) => outcome.result).length,
    // MCP names nothing it cannot replay: a turn that does not come back is lost without a word.
    missed: 0,
    lost: outcomes.filter((outcome) => !outcome.result || outcome.progress === 0).length,
  };
}

/**
 * Away and back on MCP, where resumption is per request stream: after a first turn, each of `away`
 * tools/call streams is dropped once its priming event id is read. The client reads none of their
 * progress or results (some may be on the wire already: the echo is instant) and gets them only from
 * the session's event store, the SDK example's InMemoryEventStore: the clock running, each stream is
 * resumed with `GET /mcp` and `Last-Event-ID`, read up to its result.
 *
 * Nothing is waited for between leaving and coming back, and nothing needs to be: the server hands a
 * request to its McpServer before the priming event goes out, and the echo tool stores its progress and
 * result in that same event-loop turn (no I/O, no timer), so each GET finds them stored. Were a turn
 * still running, its resumed GET would carry the rest live (it becomes the stream's connection), so it
 * would still come back, only later. What does not come back is what the store skips: it orders ids
 * `${stream}_${Date.now()}_${random}` as strings, so an event stored in the same millisecond as the
 * cursor may sort before it (never replayed), or a result before its progress (which an SDK Client
 * then drops). Such turns count as lost, as do replies not back within WAIT_MS.
 * `catchUpMs` runs to the last byte read on a resumed stream.
 */
export const awayAndBack: AwayAndBack = async (base, away) => {
  const session = await initialize(base, 'bench-away', AbortSignal.timeout(WAIT_MS));
  // The session holds every event it stored: ended either way, so a round leaves nothing to the next.
  const resumed = await awayAndBackOn(session, away).catch(async (error: unknown) => {
    await terminate(session, AbortSignal.timeout(WAIT_MS)).catch(() => {});
    throw error;
  });
  await terminate(session, AbortSignal.timeout(WAIT_MS));
  return resumed;
};
