/**
 * The hostile tenant of the hostile scenario (bench/scenarios/hostile.ts), a child process of its own so
 * that its work does not slow the quiet tenant's client: it runs one attack against the backend's routes
 * as they are (PROTOCOL.md 6e, 7) for the time it is told, then, as a bystander from another source
 * address, starts, joins and aborts one pairing, and reports. Every loop is bounded in count and in time
 * and stops by itself; every answer, whatever its status, is counted and never ends the attack.
 *
 *   child → { type: 'ready' }     parent → AttackTask     child → { type: 'ran', answers, bystander }
 *   the parent disconnects: the child exits
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Agent, request, type ClientRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { crockfordRandom, HANDLE_LENGTH } from '../../protocol/byo/pairing.js';
import type { Attack, AttackTask, FromAttacker } from './hostile.js';
import type { Integration } from './jobs.js';

/** The tenant's requests, and its unauthenticated pairing traffic, come from here; the quiet tenant's from 127.0.0.1. */
const TENANT_ADDRESS = '127.0.0.2';
const BYSTANDER_ADDRESS = '127.0.0.3';
/** The pairing holders: one attacker behind several addresses. */
const HOLDER_ADDRESSES = ['127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7'];
/** A backend frozen by a backtracking regular expression answers nothing for a minute or more; past this the request is given up. */
const REQUEST_TIMEOUT_MS = 300_000;
const FOLLOWERS = 3_000;
/** Jobs of the floods stay open this long (the longest deadline a client may ask). */
const HOUR_MS = 3_600_000;
const PAYLOAD = { session_id: 'hostile', transcript: [{ speaker: 'Eve', text: 'Anything to say?' }] };
/** 41 utterances of 99,000 characters: a body of about 3.9 MiB, under the backend's 4 MiB body limit. */
const BIG_PAYLOAD = { session_id: 'hostile', transcript: Array.from({ length: 41 }, () => ({ speaker: 'Eve', text: 'x'.repeat(99_000) })) };
const BIG_RESULT = { pad: 'x'.repeat(41 * 99_000) };
const HEARTBEAT = {
  plugin: { name: 'assistant-relay', version: '0.0.0' },
  provider_kind: 'assistant-relay',
  schema_versions: { min: 1, max: 1 },
  envelope_versions: { min: 1, max: 1 },
  running_job_ids: [],
  reasoner: { name: 'builtin' },
};
const bytes32 = () => randomBytes(32).toString('base64url');

interface Answer {
  readonly status: number | string;
  readonly json?: Record<string, unknown>;
}

/** Where requests come from: kept-alive sockets bound to one source address. */
class Source {
  readonly agent: Agent;
  constructor(
    readonly origin: URL,
    readonly localAddress: string,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets: 64, localAddress });
  }

  /** One request: its status and (small) JSON answer, or the socket error's code; never throws. */
  call(method: string, path: string, token?: string, body?: unknown): Promise<Answer> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
    };
    return new Promise((resolve) => {
      const req = request({ agent: this.agent, host: this.origin.hostname, port: this.origin.port, method, path, headers }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= 65_536) chunks.push(chunk);
        });
        res.on('end', () => {
          let json: Record<string, unknown> | undefined;
          try {
            json = size <= 65_536 ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 'no status', ...(json === undefined ? {} : { json }) });
        });
        res.on('error', (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? error.message }));
      });
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })));
      req.on('error', (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? error.message }));
      req.end(payload);
    });
  }
}

/** What the attack's requests were answered: `step status` → how many. */
const answers = new Map<string, number>();
const tally = (step: string, status: number | string | undefined) =>
  answers.set(`${step} ${status}`, (answers.get(`${step} ${status}`) ?? 0) + 1);

/** A request of the attack: its answer is counted under `step`. */
async function attempt(source: Source, step: string, method: string, path: string, token?: string, body?: unknown): Promise<Answer> {
  const answer = await source.call(method, path, token, body);
  tally(step, answer.status);
  return answer;
}

/** `loops` loops of `step` at once, until `until` or until `max` were begun in all. */
async function repeat(loops: number, until: number, max: number, step: () => Promise<unknown>): Promise<void> {
  let begun = 0;
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (performance.now() < until && begun < max) {
        begun += 1;
        await step();
      }
    }),
  );
}

/** The tenant's integration, as its client (`jobs`, `rekeys`) and as its plugin (`result`, `heartbeat`). */
function tenantPaths(tenant: Integration) {
  const base = `/api/v1/assistant/integrations/${tenant.integration_id}`;
  const createJob = (source: Source, extra: Record<string, unknown> = {}) => {
    const job_id = randomUUID();
    return attempt(source, 'create', 'POST', `${base}/jobs`, tenant.client_token, {
      job_id,
      purpose: 'live_analysis',
      payload: PAYLOAD,
      deadline_ms: HOUR_MS,
      ...extra,
    }).then((answer) => ({ job_id, ...answer }));
  };
  const result = (source: Source, job_id: string, result: unknown) =>
    attempt(source, 'result', 'POST', `${base}/jobs/${job_id}/result`, tenant.relay_token, { result });
  return { base, createJob, result };
}

/** A follower stream held open: its request, to be destroyed when the attack ends. */
function follow(origin: URL, path: string, token: string): Promise<ClientRequest | undefined> {
  return new Promise((resolve) => {
    const req = request(
      {
        agent: false,
        host: origin.hostname,
        port: origin.port,
        path,
        localAddress: TENANT_ADDRESS,
        headers: { authorization: `Bearer ${token}` },
      },
      (res) => {
        tally('follow', res.statusCode);
        res.resume();
        resolve(res.statusCode === 200 ? req : undefined);
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      tally('follow', error.code ?? error.message);
      resolve(undefined);
    });
    req.end();
  });
}

/** A pairing taken through every step with made-up keys: the backend checks their shape only. Stops at the first refusal. */
async function selfPair(source: Source): Promise<void> {
  const started = await attempt(source, 'start', 'POST', '/api/v1/pairings', undefined, {});
  if (started.status !== 201) return;
  const { pairing_id, handle, pairing_token: client } = started.json as { pairing_id: string; handle: string; pairing_token: string };
  const joined = await attempt(source, 'join', 'POST', '/api/v1/pairings/join', undefined, { handle });
  if (joined.status !== 200) return;
  const assistant = joined.json!.pairing_token as string;
  const steps: Array<[string, string, Record<string, string>]> = [
    ['commit', assistant, { commitment: bytes32() }],
    ['client-key', client, { client_key: bytes32() }],
    ['reveal', assistant, { assistant_key: bytes32(), nonce: bytes32() }],
    ['client-confirm', client, { confirmation: bytes32() }],
    ['assistant-confirm', assistant, { confirmation: bytes32() }],
  ];
  for (const [step, token, body] of steps)
    if ((await attempt(source, step, 'POST', `/api/v1/pairings/${pairing_id}/${step}`, token, body)).status !== 200) return;
}

const RUN: Record<Attack, (task: AttackTask, until: number, origin: URL) => Promise<void>> = {
  none: async (_, until) => sleep(Math.max(0, until - performance.now())),
  async redos(task, until, origin) {
    const source = new Source(origin, TENANT_ADDRESS);
    const { createJob, result } = tenantPaths(task.tenant);
    const response_schema = { type: 'object', properties: { answer: { type: 'string', pattern: '^(a+)+$' } }, required: ['answer'] };
    // One at a time: a backend without linear-time checks stands still for each result it is sent.
    await repeat(1, until, 1_000, async () => {
      const created = await createJob(source, { response_schema });
      if (created.status === 201) await result(source, created.job_id, { answer: `${'a'.repeat(task.redosLength)}!` });
    });
  },
  async oversize(task, until, origin) {
    const source = new Source(origin, TENANT_ADDRESS);
    const { createJob, result } = tenantPaths(task.tenant);
    await repeat(2, until, 32, async () => {
      const created = await createJob(source, { payload: BIG_PAYLOAD, response_schema: { type: 'object' } });
      if (created.status === 201) await result(source, created.job_id, BIG_RESULT);
    });
  },
  async 'open-jobs'(task, until, origin) {
    const source = new Source(origin, TENANT_ADDRESS);
    const { createJob } = tenantPaths(task.tenant);
    await repeat(8, until, 20_000, () => createJob(source));
  },
  async followers(task, until, origin) {
    const { base, createJob } = tenantPaths(task.tenant);
    const created = await createJob(new Source(origin, TENANT_ADDRESS));
    if (created.status !== 201) return;
    const held: ClientRequest[] = [];
    await repeat(200, until, FOLLOWERS, async () => {
      const req = await follow(origin, `${base}/jobs/${created.job_id}/events`, task.tenant.client_token);
      if (req !== undefined) held.push(req);
    });
    await sleep(Math.max(0, until - performance.now()));
    for (const req of held) req.destroy();
  },
  async 'heartbeat-flips'(task, until, origin) {
    const source = new Source(origin, TENANT_ADDRESS);
    const { base } = tenantPaths(task.tenant);
    let flips = 0;
    await repeat(8, until, 50_000, () =>
      attempt(source, 'heartbeat', 'POST', `${base}/heartbeat`, task.tenant.relay_token, {
        ...HEARTBEAT,
        status: flips++ % 2 === 0 ? 'busy' : 'ready',
      }),
    );
  },
  async rekeys(task, until, origin) {
    const source = new Source(origin, TENANT_ADDRESS);
    const { base } = tenantPaths(task.tenant);
    await repeat(8, until, 50_000, () =>
      attempt(source, 'rekey', 'POST', `${base}/rekeys`, task.tenant.client_token, {
        rekey_id: randomUUID(),
        kid: randomBytes(9).toString('base64url'),
        client_key: bytes32(),
        mac: bytes32(),
      }),
    );
  },
  async 'pairing-churn'(_, until, origin) {
    const source = new Source(origin, TENANT_ADDRESS);
    const startAndAbort = async () => {
      const started = await attempt(source, 'start', 'POST', '/api/v1/pairings', undefined, {});
      if (started.status !== 201) return;
      const { pairing_id, pairing_token } = started.json as { pairing_id: string; pairing_token: string };
      await attempt(source, 'abort', 'POST', `/api/v1/pairings/${pairing_id}/abort`, pairing_token, { reason: 'churn' });
    };
    await Promise.all([
      repeat(4, until, 20_000, startAndAbort),
      repeat(2, until, 20_000, () =>
        attempt(source, 'join', 'POST', '/api/v1/pairings/join', undefined, { handle: crockfordRandom(HANDLE_LENGTH) }),
      ),
      repeat(2, until, 2_000, () => selfPair(source)),
    ]);
  },
  async 'pairing-hold'(_, until, origin) {
    await Promise.all(
      HOLDER_ADDRESSES.map((address) => {
        const source = new Source(origin, address);
        return repeat(2, until, 100, () => attempt(source, 'start', 'POST', '/api/v1/pairings', undefined, {}));
      }),
    );
  },
};

/** Someone else pairing right after the attack, from an address of its own: each step's status. */
async function bystander(origin: URL): Promise<string> {
  const source = new Source(origin, BYSTANDER_ADDRESS);
  const started = await source.call('POST', '/api/v1/pairings', undefined, {});
  if (started.status !== 201) return `start ${started.status}`;
  const { pairing_id, handle, pairing_token } = started.json as { pairing_id: string; handle: string; pairing_token: string };
  const joined = await source.call('POST', '/api/v1/pairings/join', undefined, { handle });
  const aborted = await source.call('POST', `/api/v1/pairings/${pairing_id}/abort`, pairing_token, { reason: 'bystander' });
  source.agent.destroy();
  return `start ${started.status}, join ${joined.status}, abort ${aborted.status}`;
}

process.on('message', (task: AttackTask) => {
  const origin = new URL(task.origin);
  // Its failure is caught and sent; a send that fails means the runner is gone, and 'disconnect' ends this child.
  void RUN[task.attack](task, performance.now() + task.ms, origin)
    .then(async () => ({ type: 'ran' as const, answers: Object.fromEntries(answers), bystander: await bystander(origin) }))
    .catch((error: unknown) => ({ type: 'failed' as const, message: error instanceof Error ? error.message : String(error) }))
    .then((message: FromAttacker) => process.send!(message));
});
process.on('disconnect', () => process.exit(0));
process.send!({ type: 'ready' } satisfies FromAttacker);
