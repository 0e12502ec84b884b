/**
 * The durable baseline of the chat turn (issue 26): the floor's Form A wire (bench/floor.ts) on fastify 5,
 * with every user message and every reply appended to a SQLite table (sqlite-log.ts: WAL, one transaction
 * per event-loop turn) before it is acknowledged or sent. The 202 leaves once the message is committed;
 * the echo reply is then appended, and the progress and reply frames go to the session's streams once it
 * is committed. What a durable relay costs without an engine around the log.
 *
 *   node --import tsx bench/baselines/durable-turns.ts --port 0 --token T --db FILE
 *
 * Prints {"listening":"http://127.0.0.1:PORT"} on stdout when ready, like the relay's CLI.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { EchoSessions, RUN_ID, bearerCheck } from '../echo-wire.js';
import Fastify from 'fastify';
import { serveUntilSignal } from './durable-server.js';
import { openLog } from './sqlite-log.js';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, token: { type: 'string' }, db: { type: 'string' } },
  strict: true,
});
if (values.token === undefined || values.token === '' || values.db === undefined) {
  process.stderr.write('durable-turns: --token and --db are required\n');
  process.exit(2);
}

const authorized = bearerCheck(values.token);
const sessions = new EchoSessions();
const log = openLog(values.db);

const app = Fastify({ logger: false, keepAliveTimeout: 60_000 });
app.addHook('onRequest', async (request, reply) => {
  if (!authorized(request.headers.authorization))
    return reply.code(401).send({ error: { code: 'unauthorized', message: 'missing or wrong bearer token' } });
});

app.get<{ Querystring: { session_id?: string } }>('/v1/events', (request, reply) => {
  const sessionId = request.query.session_id;
  if (sessionId === undefined || sessionId === '') {
    void reply.code(400).send({ error: { code: 'missing_session_id', message: 'session_id is required' } });
    return;
  }
  reply.hijack();
  sessions.openReader(sessionId, request.raw, reply.raw);
});

app.post<{ Body: Record<string, unknown> | null }>('/v1/incoming', (request, reply) => {
  const { session_id: sessionId, task_id: taskId, text } = request.body ?? {};
  if (typeof sessionId !== 'string' || typeof taskId !== 'string' || typeof text !== 'string') {
    void reply.code(400).send({ error: { code: 'invalid_request', message: 'session_id, task_id and text are required' } });
    return;
  }
  log.append({ type: 'message', session_id: sessionId, task_id: taskId, text }, () => {
    void reply.code(202).send({ ok: true, session_id: sessionId, task_id: taskId });
    // The echo agent answers the committed message; its reply is sent once committed in turn.
    const reply_ = { session_id: sessionId, task_id: taskId, status: 'message', message_id: randomUUID(), reply_text: text };
    log.append({ type: 'reply', ...reply_ }, () => {
      const session = sessions.of(sessionId);
      session.seq += 1;
      const progress = JSON.stringify({ session_id: sessionId, task_id: taskId, status: 'typing', label: 'thinking' });
      const frames = `data: ${progress}\n\nid: ${RUN_ID}:${session.seq}\ndata: ${JSON.stringify(reply_)}\n\n`;
      for (const reader of session.readers) reader.write(frames);
    });
  });
});

app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: { code: 'not_found', message: 'no such route' } }));
// As many idle streams as the bench opens: the process's file limit is the only bound.
app.server.maxConnections = Number.MAX_SAFE_INTEGER;

await serveUntilSignal(app, Number(values.port), log, () => sessions.destroyReaders());
