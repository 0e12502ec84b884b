/**
 * Fuzzing every HTTP endpoint (issue 13): a host in Form A and one in Form B, a backend relay (operator,
 * client, plugin and pairing routes) and the inspector, each on loopback, get generated malformed requests
 * (requests.ts), sent byte for byte (wire.ts). Whatever comes, the server answers, never with a 5xx; a
 * refusal is `{error: {code, message}}` with a code of the catalogue; and a refused request leaves the
 * event log as it was. The servers run on a clock that does not move, so nothing appends on its own:
 * after an accepted request the test waits until the log is still, and checks each refusal against the
 * log's last position just before it.
 *
 * CI runs FUZZ_RUNS (default 40) requests per endpoint, each endpoint at seed 1213 plus its index;
 * `npm run fuzz` runs 2,000. A failure prints its seed, the path to the shrunk case and the request's
 * bytes (TESTING.md says how to replay it); each defect found is kept below as a case.
 */
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBackendRelay, type BackendRelay } from '../../adapters/backend/relay.js';
import { createAssistantHost, type Agent, type AssistantHost } from '../../index.js';
import { HTTP_ERRORS } from '../../protocol/index.js';
import { SimulatedClock } from '../support/clock.js';
import { tempDir } from '../support/host.js';
import { request } from '../support/http.js';
import { Receiver } from '../support/receiver.js';
import { verifyLogFile } from '../support/verify-log.js';
import { requestsTo, type Endpoint } from './requests.js';
import { encode, exchange, type WireRequest, type WireResponse } from './wire.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
/** Without FUZZ_SEED, each endpoint runs at 1213 plus its index; with it, every one at that seed (to replay a failure). */
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
/** With FUZZ_SEED, fast-check's path of a failure: the run goes straight to its shrunk case. */
const PATH = process.env.FUZZ_PATH;
const TOKEN = 'fuzz-host-token-0123456789';
const OPERATOR = 'fuzz-operator-token-0123456789';
const KEY = 'A'.repeat(43);
const SESSION = 's-fuzz';
const JOB = '0b9d3c4e-8f5a-4d2b-9c1e-6a7f8b9c0d1e';
const REKEY = '5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b';

/** Lets every turn end at once, unanswered: the engine settles it itself, right after the 202. */
const quietAgent: Agent = { name: 'quiet', respond: async () => {} };

interface Served {
  readonly url: string;
  readonly db: string;
  /** The routes its fastify instance serves, as `METHOD /path`. */
  readonly routes?: readonly string[];
}

/**
 * `METHOD /path` for each route in fastify's `printRoutes({ commonPrefix: false })`: a tree whose lines
 * each add a segment to their parent's path (HEAD, which fastify adds to GET, is left out).
 */
function routesOf(printed: string): string[] {
  const parents: string[] = [];
  return printed.split('\n').flatMap((line) => {
    const match = /^([│ ]*)[├└]── (\S+)(?: \(([A-Z, ]+)\))?/.exec(line);
    if (match === null) return [];
    const depth = match[1]!.length / 4;
    const path = `${parents[depth - 1] ?? ''}${match[2]}`;
    parents[depth] = path;
    return (match[3] ?? '')
      .split(', ')
      .filter((method) => method !== '' && method !== 'HEAD')
      .map((method) => `${method} ${path}`);
  });
}

const dir = tempDir();
const clock = new SimulatedClock();
let hostA: AssistantHost;
let hostB: AssistantHost;
let relay: BackendRelay;
let receiver: Receiver;
const served: Record<'hostA' | 'hostB' | 'backend' | 'inspector', Served> = {} as never;
/** What the setup created for valid requests to name. */
const made = { integration: '', relay: '', client: '', spare: '', pairing: '', handle: '', clientPairing: '', assistantPairing: '' };

beforeAll(async () => {
  receiver = await Receiver.start();
  hostA = await createAssistantHost({ db: join(dir, 'a.db'), token: TOKEN, agent: quietAgent, clock, inspect: true });
  hostB = await createAssistantHost({ db: join(dir, 'b.db'), token: TOKEN, agent: quietAgent, clock, form: 'B', callbackLoopback: true });
  relay = await createBackendRelay({ db: join(dir, 'backend.db'), operatorToken: OPERATOR, pairing: 'open', config: { clock } });
  served.hostA = {
    url: await hostA.listen({ host: '127.0.0.1', port: 0 }),
    db: join(dir, 'a.db'),
    routes: routesOf(hostA.server.printRoutes({ commonPrefix: false })),
  };
  served.hostB = { url: await hostB.listen({ host: '127.0.0.1', port: 0 }), db: join(dir, 'b.db') };
  served.backend = {
    url: await relay.listen({ host: '127.0.0.1', port: 0 }),
    db: join(dir, 'backend.db'),
    routes: routesOf(relay.server.printRoutes({ commonPrefix: false })),
  };
  served.inspector = { url: hostA.inspectorUrl!, db: join(dir, 'a.db') };

  // What valid requests name: a session, an integration with a job and a rotation, another integration
  // for the operator's routes to rotate and revoke, and a pairing both sides have joined.
  const admin = `${served.backend.url}/api/v1/admin/integrations`;
  expect(
    (await request(`${served.hostA.url}/v1/incoming`, { token: TOKEN, body: { session_id: SESSION, task_id: 't0', text: 'hello' } }))
      .status,
  ).toBe(202);
  const integration = (await request(admin, { token: OPERATOR, body: {} })).body as {
    integration_id: string;
    relay_token: string;
    client_token: string;
  };
  Object.assign(made, { integration: integration.integration_id, relay: integration.relay_token, client: integration.client_token });
  made.spare = ((await request(admin, { token: OPERATOR, body: {} })).body as { integration_id: string }).integration_id;
  const base = `${served.backend.url}/api/v1/assistant/integrations/${made.integration}`;
  expect(
    (await request(`${base}/jobs`, { token: made.client, body: { job_id: JOB, purpose: 'capability_probe', payload: {} } })).status,
  ).toBe(201);
  expect(
    (await request(`${base}/rekeys`, { token: made.client, body: { rekey_id: REKEY, kid: 'AAAAAAAAAAAA', client_key: KEY, mac: KEY } }))
      .status,
  ).toBe(201);
  const pairing = (await request(`${served.backend.url}/api/v1/pairings`, { body: {} })).body as {
    pairing_id: string;
    handle: string;
    pairing_token: string;
  };
  Object.assign(made, { pairing: pairing.pairing_id, handle: pairing.handle, clientPairing: pairing.pairing_token });
  made.assistantPairing = (
    (await request(`${served.backend.url}/api/v1/pairings/join`, { body: { handle: pairing.handle } })).body as { pairing_token: string }
  ).pairing_token;
});

afterAll(async () => {
  for (const last of readers.values()) last.database.close();
  await hostA?.close();
  await hostB?.close();
  await relay?.close();
  await receiver?.close();
  for (const db of ['a.db', 'b.db', 'backend.db']) await verifyLogFile(join(dir, db));
  rmSync(dir, { recursive: true, force: true });
});

/** `127.0.0.1:PORT` of a server (once it listens). */
const hostOf = (server: keyof typeof served) => () => new URL(served[server].url).host;

function endpoints(): Array<Endpoint & { readonly server: keyof typeof served }> {
  const a = hostOf('hostA');
  const b = hostOf('hostB');
  const backend = hostOf('backend');
  const inspector = hostOf('inspector');
  const hostToken = () => TOKEN;
  const session = { session_id: () => SESSION };
  const integration = { id: () => made.integration };
  const job = { ...integration, job_id: () => JOB };
  const pairing = { id: () => made.pairing };
  const client = () => made.client;
  const plugin = () => made.relay;
  const clientPairing = () => made.clientPairing;
  const assistantPairing = () => made.assistantPairing;
  const key = () => ({ commitment: KEY });
  const I = '/api/v1/assistant/integrations/:id';
  const P = '/api/v1/pairings';
  const A = '/api/v1/admin/integrations';
  return [
    { server: 'hostA', name: 'health', method: 'GET', route: '/healthz', host: a },
    { server: 'hostA', name: 'metrics', method: 'GET', route: '/metrics', token: hostToken, host: a },
    {
      server: 'hostA',
      name: 'Form A incoming',
      method: 'POST',
      route: '/v1/incoming',
      token: hostToken,
      body: () => ({ session_id: SESSION, task_id: 't1', text: 'hi', system_prelude: 'be brief' }),
      host: a,
    },
    { server: 'hostA', name: 'Form A events', method: 'GET', route: '/v1/events', token: hostToken, query: session, stream: true, host: a },
    {
      server: 'hostA',
      name: 'Form A session',
      method: 'GET',
      route: '/v1/sessions/:session_id',
      token: hostToken,
      params: session,
      host: a,
    },
    {
      server: 'hostB',
      name: 'Form B incoming',
      method: 'POST',
      route: '/v1/incoming',
      token: hostToken,
      body: () => ({
        session_id: SESSION,
        task_id: '9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a',
        text: 'hi',
        callback: { url: `${receiver.url}/cb`, token: 'callback-token' },
      }),
      host: b,
    },
    {
      server: 'hostB',
      name: 'Form B session',
      method: 'GET',
      route: '/v1/sessions/:session_id',
      token: hostToken,
      params: session,
      host: b,
    },
    { server: 'backend', name: 'backend health', method: 'GET', route: '/healthz', host: backend },
    { server: 'backend', name: 'backend metrics', method: 'GET', route: '/metrics', token: () => OPERATOR, host: backend },
    {
      server: 'backend',
      name: 'operator: create integration',
      method: 'POST',
      route: A,
      token: () => OPERATOR,
      body: () => ({ provider_kind: 'assistant-relay' }),
      host: backend,
    },
    { server: 'backend', name: 'operator: list integrations', method: 'GET', route: A, token: () => OPERATOR, host: backend },
    {
      server: 'backend',
      name: 'operator: rotate a token',
      method: 'POST',
      route: `${A}/:id/tokens/:role/rotate`,
      token: () => OPERATOR,
      params: { id: () => made.spare, role: () => 'client' },
      host: backend,
    },
    {
      server: 'backend',
      name: 'operator: revoke',
      method: 'POST',
      route: `${A}/:id/revoke`,
      token: () => OPERATOR,
      params: { id: () => made.spare },
      host: backend,
    },
    {
      server: 'backend',
      name: 'operator: pairing ticket',
      method: 'POST',
      route: '/api/v1/admin/pairing-tickets',
      token: () => OPERATOR,
      body: () => ({ ttl_ms: 60_000 }),
      host: backend,
    },
    { server: 'backend', name: 'client: integration', method: 'GET', route: I, token: client, params: integration, host: backend },
    {
      server: 'backend',
      name: 'client: create job',
      method: 'POST',
      route: `${I}/jobs`,
      token: client,
      params: integration,
      body: () => ({
        job_id: JOB,
        purpose: 'live_analysis',
        payload: { session_id: 'call', transcript: [{ speaker: 'a', text: 'hi' }] },
        deadline_ms: 30_000,
      }),
      host: backend,
    },
    { server: 'backend', name: 'client: job', method: 'GET', route: `${I}/jobs/:job_id`, token: client, params: job, host: backend },
    {
      server: 'backend',
      name: 'client: job events',
      method: 'GET',
      route: `${I}/jobs/:job_id/events`,
      token: client,
      params: job,
      stream: true,
      host: backend,
    },
    {
      server: 'backend',
      name: 'client: cancel job',
      method: 'POST',
      route: `${I}/jobs/:job_id/cancel`,
      token: client,
      params: job,
      host: backend,
    },
    {
      server: 'backend',
      name: 'client: request rekey',
      method: 'POST',
      route: `${I}/rekeys`,
      token: client,
      params: integration,
      body: () => ({ rekey_id: REKEY, kid: 'AAAAAAAAAAAA', client_key: KEY, mac: KEY }),
      host: backend,
    },
    {
      server: 'backend',
      name: 'client: rekey',
      method: 'GET',
      route: `${I}/rekeys/:rekey_id`,
      token: client,
      params: { ...integration, rekey_id: () => REKEY },
      host: backend,
    },
    {
      server: 'backend',
      name: 'plugin: stream',
      method: 'GET',
      route: `${I}/stream`,
      token: plugin,
      params: integration,
      stream: true,
      host: backend,
    },
    {
      server: 'backend',
      name: 'plugin: heartbeat',
      method: 'POST',
      route: `${I}/heartbeat`,
      token: plugin,
      params: integration,
      body: () => ({
        plugin: { name: 'fuzz', version: '1.0.0' },
        provider_kind: 'assistant-relay',
        schema_versions: { min: 1, max: 1 },
        envelope_versions: { min: 1, max: 1 },
        status: 'ready',
        running_job_ids: [JOB],
        reasoner: { name: 'builtin' },
      }),
      host: backend,
    },
    {
      server: 'backend',
      name: 'plugin: running',
      method: 'POST',
      route: `${I}/jobs/:job_id/running`,
      token: plugin,
      params: job,
      host: backend,
    },
    {
      server: 'backend',
      name: 'plugin: result',
      method: 'POST',
      route: `${I}/jobs/:job_id/result`,
      token: plugin,
      params: job,
      body: () => ({ result: { insights: [] } }),
      host: backend,
    },
    {
      server: 'backend',
      name: 'plugin: answer rekey',
      method: 'POST',
      route: `${I}/rekeys/:rekey_id`,
      token: plugin,
      params: { ...integration, rekey_id: () => REKEY },
      body: () => ({ assistant_key: KEY, mac: KEY }),
      host: backend,
    },
    {
      server: 'backend',
      name: 'pairing: start',
      method: 'POST',
      route: P,
      body: () => ({ provider_kind: 'assistant-relay', schema_version: 1, envelope_version: 1 }),
      host: backend,
    },
    { server: 'backend', name: 'pairing: join', method: 'POST', route: `${P}/join`, body: () => ({ handle: made.handle }), host: backend },
    { server: 'backend', name: 'pairing: read', method: 'GET', route: `${P}/:id`, token: clientPairing, params: pairing, host: backend },
    {
      server: 'backend',
      name: 'pairing: commit',
      method: 'POST',
      route: `${P}/:id/commit`,
      token: assistantPairing,
      params: pairing,
      body: key,
      host: backend,
    },
    {
      server: 'backend',
      name: 'pairing: client key',
      method: 'POST',
      route: `${P}/:id/client-key`,
      token: clientPairing,
      params: pairing,
      body: () => ({ client_key: KEY }),
      host: backend,
    },
    {
      server: 'backend',
      name: 'pairing: reveal',
      method: 'POST',
      route: `${P}/:id/reveal`,
      token: assistantPairing,
      params: pairing,
      body: () => ({ assistant_key: KEY, nonce: KEY }),
      host: backend,
    },
    {
      server: 'backend',
      name: 'pairing: client confirm',
      method: 'POST',
      route: `${P}/:id/client-confirm`,
      token: clientPairing,
      params: pairing,
      body: () => ({ confirmation: KEY }),
      host: backend,
    },
    {
      server: 'backend',
      name: 'pairing: assistant confirm',
      method: 'POST',
      route: `${P}/:id/assistant-confirm`,
      token: assistantPairing,
      params: pairing,
      body: () => ({ confirmation: KEY }),
      host: backend,
    },
    {
      server: 'backend',
      name: 'pairing: abort',
      method: 'POST',
      route: `${P}/:id/abort`,
      token: clientPairing,
      params: pairing,
      body: () => ({ reason: 'fuzz' }),
      host: backend,
    },
    { server: 'inspector', name: 'inspector: page', method: 'GET', route: '/', host: inspector },
    { server: 'inspector', name: 'inspector: entities', method: 'GET', route: '/api/entities', host: inspector },
    {
      server: 'inspector',
      name: 'inspector: entity',
      method: 'GET',
      route: '/api/entities/:key',
      params: { key: () => `session::${SESSION}` },
      host: inspector,
    },
    {
      server: 'inspector',
      name: 'inspector: statechart',
      method: 'GET',
      route: '/api/statecharts/:name.svg',
      params: { name: () => 'task' },
      host: inspector,
    },
    { server: 'inspector', name: 'inspector: live', method: 'GET', route: '/api/live', stream: true, host: inspector },
  ];
}

/** One read-only connection a log, kept for the run: each statement reads the log as it stands then. */
const readers = new Map<string, Database.Statement>();

/** The position of the last event in `db` (0: none), read without disturbing its writer. */
function lastPosition(db: string): number {
  let last = readers.get(db);
  if (last === undefined)
    readers.set(db, (last = new Database(db, { readonly: true }).prepare('SELECT coalesce(max(position), 0) FROM events').pluck()));
  return last.get() as number;
}

/** Waits until nothing has been appended to `db` for a few polls: what an accepted request set going has ended. */
async function untilStill(db: string): Promise<void> {
  let last = lastPosition(db);
  for (let still = 0, polls = 0; still < 3; polls += 1) {
    if (polls > 200) throw new Error(`${db} kept growing after an accepted request`);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const now = lastPosition(db);
    still = now === last ? still + 1 : 0;
    last = now;
  }
}

const CODES = new Set(Object.keys(HTTP_ERRORS));

/** Bytes of heap in use once garbage is collected (the servers run in this process). */
function heapInUse(): number {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** A leak of a kilobyte a request would pass this in `npm run fuzz` (2,000 requests an endpoint). */
const HEAP_GROWTH_LIMIT = 32 * 1024 * 1024;
let heapBefore = 0;

function describeExchange(request: WireRequest, response?: WireResponse): string {
  const bytes = encode(request).toString('latin1');
  return `request:\n${bytes.length > 2_000 ? `${bytes.slice(0, 2_000)}… (${bytes.length} bytes)` : bytes}${response === undefined ? '' : `\nanswer: ${response.status} ${response.body.slice(0, 500)}`}`;
}

/** Every answer to one request checked; the tally of statuses per endpoint, for the summary. */
async function check(endpoint: ReturnType<typeof endpoints>[number], wire: WireRequest, tally: Map<number, number>): Promise<void> {
  const { url, db } = served[endpoint.server];
  const before = lastPosition(db);
  const response = await exchange(url, wire).catch((error: Error) => {
    throw new Error(`${endpoint.name}: ${error.message}\n${describeExchange(wire)}`);
  });
  tally.set(response.status, (tally.get(response.status) ?? 0) + 1);
  const about = () => `${endpoint.name}\n${describeExchange(wire, response)}`;
  expect(response.status, about()).toBeLessThan(500);
  if (response.status < 400) return untilStill(db);
  expect(lastPosition(db), `a refused request appended to the log: ${about()}`).toBe(before);
  // A HEAD answer has no body; every other refusal is one of the catalogue's.
  if (wire.method === 'HEAD') return;
  let body: unknown;
  expect(() => (body = JSON.parse(response.body)), about()).not.toThrow();
  const error = (body as { error?: { code?: unknown; message?: unknown } }).error;
  expect(typeof error?.message, about()).toBe('string');
  expect(CODES.has(error?.code as string), `code ${String(error?.code)} is not in the catalogue: ${about()}`).toBe(true);
}

describe('fuzzing every endpoint: no 5xx, coded refusals, nothing logged from refused input', () => {
  it('fuzzes every route the host and the backend serve', () => {
    const fuzzed = new Set(
      endpoints().map(({ method, route, server }) => `${server === 'backend' ? 'backend' : 'host'} ${method} ${route}`),
    );
    const routes = [...served.hostA.routes!.map((route) => `host ${route}`), ...served.backend.routes!.map((route) => `backend ${route}`)];
    expect(routes.length).toBeGreaterThan(20);
    for (const route of routes) expect(fuzzed, `${route} is fuzzed`).toContain(route);
  });

  it('measures the heap before', () => {
    heapBefore = heapInUse();
    expect(heapBefore).toBeGreaterThan(0);
  });

  it.each(endpoints().map((endpoint, index) => [endpoint.name, endpoint, index] as const))(
    '%s',
    async (_, endpoint, index) => {
      const tally = new Map<number, number>();
      // Each endpoint its own seed, so that endpoints are not all bent the same way.
      await fc.assert(
        fc.asyncProperty(requestsTo(endpoint), (wire) => check(endpoint, wire, tally)),
        { numRuns: RUNS, seed: SEED ?? 1213 + index, ...(PATH === undefined ? {} : { path: PATH }), endOnFailure: true },
      );
      const statuses = [...tally].sort(([a], [b]) => a - b).map(([status, n]) => `${status}×${n}`);
      console.log(`fuzz ${endpoint.name}: ${statuses.join(' ')}`);
    },
    30_000 + RUNS * 50,
  );

  it('leaves the heap about where it was', () => {
    const growth = heapInUse() - heapBefore;
    console.log(`fuzz: heap ${(growth / 1024 / 1024).toFixed(1)} MiB larger after ${RUNS} requests an endpoint`);
    expect(growth).toBeLessThan(HEAP_GROWTH_LIMIT);
  });
});

/** The shrunk cases of defects the fuzz found, kept as they were found. */
describe('what the fuzz found', () => {
  it("HEAD on the inspector's live stream is answered (it waited forever for headers a stream never sends)", async () => {
    const host = new URL(served.inspector.url).host;
    const response = await exchange(served.inspector.url, { method: 'HEAD', target: '/api/live', headers: [['host', host]] }, 5_000);
    expect(response.status).toBe(404);
  });
});
