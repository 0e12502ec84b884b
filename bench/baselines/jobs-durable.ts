/**
 * The durable job baseline (issue 26): the job round trip of jobs-core.ts on fastify 5, every create,
 * delivery, `running` and result appended to a SQLite table (sqlite-log.ts: WAL, `synchronous=NORMAL`,
 * one transaction per event-loop turn) before it is answered or sent. What the relay's job costs without
 * the engine around its log.
 *
 *   node --import tsx bench/baselines/jobs-durable.ts --port 0 --integration ID --client-token T --relay-token T --db FILE
 *
 * Prints {"listening":"http://127.0.0.1:PORT"} on stdout when ready, like the relay's CLI.
 */
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { JobsCore, jobsServerArgs, NOT_FOUND, roleOf } from './jobs-core.js';
import { serveUntilSignal } from './durable-server.js';
import { openLog } from './sqlite-log.js';

const args = jobsServerArgs('jobs-durable');
if (args.db === undefined) {
  process.stderr.write('jobs-durable: --db is required\n');
  process.exit(2);
}
const role = roleOf(args);
const log = openLog(args.db);
const core = new JobsCore(args.integration, log.append);

const app = Fastify({ logger: false, keepAliveTimeout: 60_000 });
const BASE = `/api/v1/assistant/integrations/${args.integration}`;
type Request = FastifyRequest<{ Params: { job_id: string } }>;
const respond = (reply: FastifyReply) => (status: number, json: string) => void reply.code(status).type('application/json').send(json);
/** A route of the client's token or of the plugin's. */
const as =
  (who: 'client' | 'relay', handle: (request: Request, reply: FastifyReply) => void) => (request: Request, reply: FastifyReply) => {
    if (role(request.headers.authorization) !== who)
      return void reply.code(401).send({ error: { code: 'unauthorized', message: 'missing or wrong bearer token' } });
    handle(request, reply);
  };
/** An SSE response: fastify lets go of it. */
const hijacked = (reply: FastifyReply) => {
  reply.hijack();
  return reply.raw;
};

app.post(
  `${BASE}/jobs`,
  as('client', (request, reply) => core.create(request.body, respond(reply))),
);
app.get(
  `${BASE}/jobs/:job_id/events`,
  as('client', (request, reply) => {
    const raw = hijacked(reply);
    if (!core.follow(request.params.job_id, raw))
      raw.writeHead(404, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(NOT_FOUND) }).end(NOT_FOUND);
  }),
);
app.get(
  `${BASE}/stream`,
  as('relay', (_request, reply) => core.stream(hijacked(reply))),
);
app.post(
  `${BASE}/jobs/:job_id/running`,
  as('relay', (request, reply) => core.running(request.params.job_id, respond(reply))),
);
app.post(
  `${BASE}/jobs/:job_id/result`,
  as('relay', (request, reply) => core.result(request.params.job_id, request.body, respond(reply))),
);

await serveUntilSignal(app, args.port, log, () => core.close());
