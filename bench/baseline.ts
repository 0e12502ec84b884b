/**
 * The bench's bare baseline: the same Form A wire surface as the relay with nothing behind it.
 * POST /v1/incoming checks the bearer, takes the JSON body, answers 202 and writes one in-memory
 * `message` reply frame to the session's open GET /v1/events streams. No log, no statecharts, no
 * agent, no request logging: it is the floor a fastify server can reach on this machine.
 *
 *   node --import tsx bench/baseline.ts --port 0 --token T
 *
 * Prints {"listening":"http://127.0.0.1:PORT"} on stdout when ready, like the relay's CLI.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, token: { type: 'string' } },
  strict: true,
});
if (values.token === undefined || values.token === '') {
  process.stderr.write('baseline: --token is required\n');
  process.exit(2);
}

// Same constant-time check as the relay's auth hook, so both pay the same per-request crypto.
const digest = (text: string) => createHash('sha256').update(text).digest();
const expected = digest(values.token);
const authorized = (header: string | undefined) =>
  header !== undefined && header.startsWith('Bearer ') && timingSafeEqual(digest(header.slice(7)), expected);

interface Session {
  readonly readers: Set<ServerResponse>;
  seq: number;
}
const sessions = new Map<string, Session>();
const sessionOf = (id: string): Session => {
  let session = sessions.get(id);
  if (session === undefined) sessions.set(id, (session = { readers: new Set(), seq: 0 }));
  return session;
};
const epoch = randomBytes(8).toString('base64url');
const generation = randomBytes(8).toString('base64url');

const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });

app.addHook('onRequest', async (request, reply) => {
  if (!authorized(request.headers.authorization)) {
    return reply.code(401).send({ error: { code: 'unauthorized', message: 'missing or wrong bearer token' } });
  }
});

app.get('/v1/events', async (request, reply) => {
  const { session_id: sessionId } = request.query as Record<string, unknown>;
  if (typeof sessionId !== 'string' || sessionId === '') {
    return reply.code(400).send({ error: { code: 'missing_session_id', message: 'session_id is required' } });
  }
  reply.hijack();
  const res = reply.raw;
  res.socket?.setNoDelay(true);
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
  });
  res.write(': open\n\n');
  const { readers } = sessionOf(sessionId);
  readers.add(res);
  res.on('close', () => readers.delete(res));
  return reply;
});

app.post('/v1/incoming', async (request, reply) => {
  const body = request.body as Record<string, unknown> | null;
  const sessionId = body?.session_id;
  const taskId = body?.task_id;
  const text = body?.text;
  if (typeof sessionId !== 'string' || typeof taskId !== 'string' || typeof text !== 'string') {
    return reply.code(400).send({ error: { code: 'invalid_request', message: 'session_id, task_id and text are required' } });
  }
  const session = sessionOf(sessionId);
  session.seq += 1;
  const data = JSON.stringify({ session_id: sessionId, task_id: taskId, status: 'message', message_id: randomUUID(), reply_text: text });
  const frame = `id: ${epoch}:${generation}:${session.seq}\ndata: ${data}\n\n`;
  for (const res of session.readers) res.write(frame);
  return reply.code(202).send({ ok: true, session_id: sessionId, task_id: taskId });
});

const url = await app.listen({ host: '127.0.0.1', port: Number(values.port) });
process.stdout.write(`${JSON.stringify({ listening: url })}\n`);

const stop = () => {
  for (const { readers } of sessions.values()) for (const res of readers) res.destroy();
  void app.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
