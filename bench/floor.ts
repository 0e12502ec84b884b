/**
 * The bench's floor: the Form A wire surface of the relay with nothing behind it, on bare `node:http`
 * (no framework, no log, no statecharts, no agent). POST /v1/incoming checks the bearer, reads the JSON
 * body, answers 202 and writes the echo turn to the session's open GET /v1/events streams from memory:
 * one progress frame, then the terminal reply with the user's text. What no relay can beat on this machine.
 *
 *   node --import tsx bench/floor.ts --port 0 --token T
 *
 * Prints {"listening":"http://127.0.0.1:PORT"} on stdout when ready, like the relay's CLI.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { parseArgs } from 'node:util';
import { EchoSessions, RUN_ID, bearerCheck } from './echo-wire.js';

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' }, token: { type: 'string' } }, strict: true });
if (values.token === undefined || values.token === '') {
  process.stderr.write('floor: --token is required\n');
  process.exit(2);
}

const authorized = bearerCheck(values.token);
const sessions = new EchoSessions();

function answer(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

function stream(request: IncomingMessage, response: ServerResponse, sessionId: string): void {
  sessions.openReader(sessionId, request, response);
}

function incoming(request: IncomingMessage, response: ServerResponse): void {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    let body: Record<string, unknown> | undefined;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    } catch {
      body = undefined;
    }
    const { session_id: sessionId, task_id: taskId, text } = body ?? {};
    if (typeof sessionId !== 'string' || typeof taskId !== 'string' || typeof text !== 'string') {
      answer(response, 400, { error: { code: 'invalid_request', message: 'session_id, task_id and text are required' } });
      return;
    }
    const session = sessions.of(sessionId);
    session.seq += 1;
    answer(response, 202, { ok: true, session_id: sessionId, task_id: taskId });
    const progress = JSON.stringify({ session_id: sessionId, task_id: taskId, status: 'typing', label: 'thinking' });
    const reply = JSON.stringify({ session_id: sessionId, task_id: taskId, status: 'message', message_id: randomUUID(), reply_text: text });
    const frames = `data: ${progress}\n\nid: ${RUN_ID}:${session.seq}\ndata: ${reply}\n\n`;
    for (const reader of session.readers) reader.write(frames);
  });
}

const server = createServer((request, response) => {
  if (!authorized(request.headers.authorization)) {
    answer(response, 401, { error: { code: 'unauthorized', message: 'missing or wrong bearer token' } });
    return;
  }
  const url = new URL(request.url ?? '/', 'http://floor');
  if (request.method === 'GET' && url.pathname === '/v1/events') {
    const sessionId = url.searchParams.get('session_id');
    if (sessionId === null || sessionId === '')
      answer(response, 400, { error: { code: 'missing_session_id', message: 'session_id is required' } });
    else stream(request, response, sessionId);
  } else if (request.method === 'POST' && url.pathname === '/v1/incoming') incoming(request, response);
  else answer(response, 404, { error: { code: 'not_found', message: 'no such route' } });
});
// As many idle streams as the bench opens: the process's file limit is the only bound.
server.maxConnections = Number.MAX_SAFE_INTEGER;
server.keepAliveTimeout = 60_000;

server.listen(Number(values.port), '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ listening: `http://127.0.0.1:${port}` })}\n`);
});

const stop = () => {
  sessions.destroyReaders();
  server.close(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
