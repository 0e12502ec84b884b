/**
 * The in-memory job baseline (issue 26): the job round trip of jobs-core.ts on bare `node:http`, with
 * nothing kept but memory (each step acted on at once). What no job relay can beat on this machine.
 *
 *   node --import tsx bench/baselines/jobs-plain.ts --port 0 --integration ID --client-token T --relay-token T
 *
 * Prints {"listening":"http://127.0.0.1:PORT"} on stdout when ready, like the relay's CLI.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { JobsCore, jobsServerArgs, NOT_FOUND, roleOf } from './jobs-core.js';

const args = jobsServerArgs('jobs-plain');
const role = roleOf(args);
const core = new JobsCore(args.integration, (_record, then) => then());
const PREFIX = `/api/v1/assistant/integrations/${args.integration}`;

function answer(response: ServerResponse, status: number, json: string): void {
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) }).end(json);
}

/** The request's JSON body, or undefined if it is not JSON. */
function body(request: IncomingMessage, then: (parsed: unknown) => void): void {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      parsed = undefined;
    }
    then(parsed);
  });
}

const server = createServer((request, response) => {
  const respond = (status: number, json: string) => answer(response, status, json);
  const path = request.url ?? '/';
  const who = role(request.headers.authorization);
  const match = path.startsWith(PREFIX)
    ? /^(\/stream|\/jobs)$|^\/jobs\/([^/]+)\/(events|running|result)$/.exec(path.slice(PREFIX.length))
    : null;
  const route = match === null ? 'none' : `${request.method} ${match[1] ?? match[3]}`;
  const jobId = match?.[2] ?? '';
  if (who === undefined) return respond(401, '{"error":{"code":"unauthorized","message":"missing or wrong bearer token"}}');
  if (who === 'client' && route === 'POST /jobs') return body(request, (parsed) => core.create(parsed, respond));
  if (who === 'client' && route === 'GET events') {
    if (!core.follow(jobId, response)) respond(404, NOT_FOUND);
    return;
  }
  if (who === 'relay' && route === 'GET /stream') return core.stream(response);
  if (who === 'relay' && route === 'POST running') return body(request, () => core.running(jobId, respond));
  if (who === 'relay' && route === 'POST result') return body(request, (parsed) => core.result(jobId, parsed, respond));
  respond(404, '{"error":{"code":"not_found","message":"no such route"}}');
});
server.keepAliveTimeout = 60_000;

server.listen(args.port, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ listening: `http://127.0.0.1:${port}` })}\n`);
});

const stop = () => {
  core.close();
  server.close(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
