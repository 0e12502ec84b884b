/**
 * Issue 23, part 1, against a real backend process over loopback: a tenant's `response_schema` is hostile
 * input. Its patterns run on RE2, so a pattern that backtracks without end, met with a result made to
 * trip it, is judged at once (reproduced before: 53 s of a frozen event loop for 32 `a` and a `!`; here 40,
 * 256 times as long), while other callers are answered; a schema RE2 cannot check, or over its bounds, is
 * refused 400 `unsupported_response_schema`; a payload or a result over `--max-job-bytes` is refused 413;
 * a result within every bound whose check would still take seconds, posted again and again, is checked
 * in a worker thread and refused 422 `result_check_too_costly` at its budget, one at a time per
 * integration (429 past it), while another integration's jobs complete. Nothing refused is logged
 * (PROTOCOL.md 6.10 to 6.12).
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHAPED_ENVELOPE } from '../support/backend.js';
import { killChildren, runCli, started } from '../support/child.js';
import { tempDir } from '../support/host.js';
import { request } from '../support/http.js';
import { countEvents, readEvents } from '../support/log.js';

const MAX_JOB_BYTES = 64 * 1024;
const PAYLOAD = { session_id: 'call-1', transcript: [{ speaker: 'Ana', text: 'What is the budget?' }] };
/** `n` bytes of text, for payloads and results over the bound. */
const filler = (n: number) => 'x'.repeat(n);
const BACKTRACKS = `${'a'.repeat(40)}!`;

let dir: string;
let url: string;
let db: string;
let integration: { integration_id: string; relay_token: string; client_token: string };
const base = () => `${url}/api/v1/assistant/integrations/${integration.integration_id}`;
const asClient = (path: string, body?: unknown) =>
  request(`${base()}${path}`, { token: integration.client_token, ...(body === undefined ? {} : { body }) });
const asPlugin = (path: string, body?: unknown) =>
  request(`${base()}${path}`, { token: integration.relay_token, ...(body === undefined ? { method: 'POST' } : { body }) });

/** A job created for `response_schema` (its purpose's own unless given), that its plugin says it runs. */
async function runningJob(job: Record<string, unknown> = {}): Promise<string> {
  const job_id = randomUUID();
  expect((await asClient('/jobs', { job_id, purpose: 'live_analysis', payload: PAYLOAD, ...job })).status).toBe(201);
  expect((await asPlugin(`/jobs/${job_id}/running`)).status).toBe(200);
  return job_id;
}

beforeAll(async () => {
  dir = tempDir();
  db = join(dir, 'backend.db');
  integration = JSON.parse((await runCli(['backend', 'integration', 'create', '--db', db])).stdout);
  url = (await started(['backend', '--port', '0', '--db', db, '--max-job-bytes', String(MAX_JOB_BYTES), '--log-level', 'warn'])).line
    .listening as string;
});

afterAll(async () => {
  await killChildren();
  rmSync(dir, { recursive: true, force: true });
});

describe('a pattern that backtracks without end, and a result made to trip it', () => {
  it.each([
    ['pattern', { properties: { a: { type: 'string', pattern: '^(a+)+$' } } }, { a: BACKTRACKS }, 'result/a must match pattern "^(a+)+$"'],
    [
      'patternProperties',
      { patternProperties: { '^(a+)+$': { type: 'number' } }, additionalProperties: false },
      { [BACKTRACKS]: 1 },
      'result must NOT have additional properties',
    ],
    [
      'propertyNames',
      { propertyNames: { pattern: '^(a+)+$' } },
      { [BACKTRACKS]: 1 },
      'result must match pattern "^(a+)+$", result property name must be valid',
    ],
  ])(
    'in %s: judged at once, 422 result_invalid, while /healthz is answered; the job stays open for a conforming result',
    async (_where, schema, hostile, problem) => {
      const job_id = await runningJob({ response_schema: { type: 'object', ...schema } });
      const [judged, health] = await Promise.all([asPlugin(`/jobs/${job_id}/result`, { result: hostile }), request(`${url}/healthz`)]);
      expect(judged).toMatchObject({ status: 422, body: { error: { code: 'result_invalid', message: problem } } });
      expect(health.status).toBe(200);
      const conforming = Object.fromEntries(
        Object.entries(hostile).map(([key, value]) => [key.replace('!', ''), typeof value === 'string' ? value.replace('!', '') : value]),
      );
      expect((await asPlugin(`/jobs/${job_id}/result`, { result: conforming })).status).toBe(200);
      expect((await asClient(`/jobs/${job_id}`)).body).toMatchObject({ state: 'completed', result: conforming });
    },
  );
});

describe('a response_schema the backend cannot check, or over its bounds', () => {
  const nested = (levels: number) =>
    Array.from({ length: levels }).reduce<Record<string, unknown>>((inner) => ({ type: 'object', properties: { a: inner } }), {
      type: 'string',
    });
  it.each([
    ['a lookahead', { properties: { a: { type: 'string', pattern: '^(?!admin$)' } } }, /RE2 does not run the pattern/],
    ['a lookbehind', { patternProperties: { '(?<=x)y': {} } }, /RE2 does not run the pattern/],
    ['a backreference', { properties: { a: { type: 'string', pattern: '^(a)\\1$' } } }, /RE2 does not run the pattern/],
    ['nesting 40 levels', nested(20), /nests deeper than 32 levels/],
    ['70 KiB of JSON', { type: 'object', description: filler(70 * 1024) }, /more than 65536/],
    [
      '600 properties of one keyword each: 1,202 members',
      { type: 'object', properties: Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`p${i}`, { type: 'string' }])) },
      /more than 1000 members/,
    ],
    [
      'a $ref used twice at each of 12 steps',
      {
        $defs: Object.fromEntries([
          ...Array.from({ length: 12 }, (_, i) => [`d${i}`, { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] }]),
          ['d12', { type: 'object' }],
        ]),
        $ref: '#/$defs/d0',
      },
      /more than 1000 members/,
    ],
    ['a $ref back to itself', { allOf: [{ $ref: '#' }] }, /leads back to where it is used/],
  ])('%s: 400 unsupported_response_schema, nothing logged', async (_what, schema, message) => {
    const before = countEvents(db);
    const answer = await asClient('/jobs', { job_id: randomUUID(), purpose: 'live_analysis', payload: PAYLOAD, response_schema: schema });
    expect(answer).toMatchObject({
      status: 400,
      body: { error: { code: 'unsupported_response_schema', message: expect.stringMatching(message) } },
    });
    expect(countEvents(db)).toBe(before);
  });

  it('what is not a JSON Schema at all is still 400 invalid_response_schema', async () => {
    const answer = await asClient('/jobs', {
      job_id: randomUUID(),
      purpose: 'live_analysis',
      payload: PAYLOAD,
      response_schema: { type: 'nothing' },
    });
    expect(answer).toMatchObject({ status: 400, body: { error: { code: 'invalid_response_schema' } } });
  });
});

describe('a payload or a result over --max-job-bytes', () => {
  it.each([
    ['a plain payload', { payload: { ...PAYLOAD, context: filler(MAX_JOB_BYTES) } }],
    ['a BYO payload (its envelope is measured)', { byo: true, payload: { ...SHAPED_ENVELOPE, ciphertext: 'A'.repeat(MAX_JOB_BYTES) } }],
  ])('%s: 413 payload_too_large, nothing logged', async (_what, job) => {
    const before = countEvents(db);
    const answer = await asClient('/jobs', { job_id: randomUUID(), purpose: 'live_analysis', ...job });
    expect(answer).toMatchObject({
      status: 413,
      body: { error: { code: 'payload_too_large', message: expect.stringContaining(`more than the ${MAX_JOB_BYTES}`) } },
    });
    expect(countEvents(db)).toBe(before);
  });

  it('a result with an extra field that takes it past the bound: 413 result_too_large, nothing logged, the job still open', async () => {
    const job_id = await runningJob();
    const result = { insights: [{ text: 'Ask for the budget owner.', kind: 'question', confidence: 0.7 }] };
    const before = countEvents(db);
    expect(await asPlugin(`/jobs/${job_id}/result`, { result: { ...result, extra: filler(MAX_JOB_BYTES) } })).toMatchObject({
      status: 413,
      body: { error: { code: 'result_too_large' } },
    });
    expect(countEvents(db)).toBe(before);
    expect((await asClient(`/jobs/${job_id}`)).body).toMatchObject({ state: 'running' });
    expect((await asPlugin(`/jobs/${job_id}/result`, { result })).status).toBe(200);
  });

  it("a body past its route's limit is refused unread: 413 body_too_large, nothing logged", async () => {
    const before = countEvents(db);
    const answer = await asClient('/jobs', {
      job_id: randomUUID(),
      purpose: 'live_analysis',
      payload: { ...PAYLOAD, context: filler(8 * MAX_JOB_BYTES + 1024) },
    });
    expect(answer).toMatchObject({ status: 413, body: { error: { code: 'body_too_large' } } });
    expect(countEvents(db)).toBe(before);
  });
});

describe('a result within every bound whose check would take seconds, posted again and again', () => {
  /**
   * 480 `maxLength` (about 960 members) on one string of 8 MiB, within a `--max-job-bytes` of 16 MiB: 4 to 9 s
   * of checking in a new thread, several times the budget of 1 s. Measured on 2 cores, one MiB takes 0.5 to
   * 1.2 s (two modes, as V8 optimizes early or late), more when loaded: on a string of 1 MiB the check
   * straddled the budget, and one that ended within it was answered 200 (the result conforms).
   */
  const COSTLY_SCHEMA = {
    type: 'object',
    properties: { a: { allOf: Array.from({ length: 480 }, (_, i) => ({ maxLength: 10_000_000 + i })) } },
  };
  const COSTLY_RESULT = { a: 'a'.repeat(8 * 1024 * 1024) };
  const insights = { insights: [{ text: 'Ask for the budget owner.', kind: 'question', confidence: 0.7 }] };
  let costlyUrl: string;
  let costlyDb: string;
  let output: { stdout: string; stderr: string };
  let hostile: typeof integration;
  let quiet: typeof integration;
  const on = (which: typeof integration, role: 'client' | 'plugin', path: string, body?: unknown) =>
    request(`${costlyUrl}/api/v1/assistant/integrations/${which.integration_id}${path}`, {
      token: role === 'client' ? which.client_token : which.relay_token,
      ...(body === undefined ? { method: role === 'plugin' ? 'POST' : 'GET' } : { body }),
    });

  beforeAll(async () => {
    costlyDb = join(dir, 'costly.db');
    hostile = JSON.parse((await runCli(['backend', 'integration', 'create', '--db', costlyDb])).stdout);
    quiet = JSON.parse((await runCli(['backend', 'integration', 'create', '--db', costlyDb])).stdout);
    // The quiet integration creates jobs for as long as the attack lasts: more than a minute's default allows.
    const backend = await started([
      'backend',
      '--port',
      '0',
      '--db',
      costlyDb,
      '--result-check-timeout',
      '1s',
      '--max-job-bytes',
      String(16 * 1024 * 1024),
      '--max-jobs-per-minute',
      '100000',
      '--log-level',
      'warn',
    ]);
    costlyUrl = backend.line.listening as string;
    output = backend.output;
  });

  it("is refused 422 result_check_too_costly at the check's budget, a second at once 429 with Retry-After, nothing logged; meanwhile a quiet integration's jobs complete and /healthz answers", async () => {
    const job_id = randomUUID();
    expect(
      (await on(hostile, 'client', '/jobs', { job_id, purpose: 'live_analysis', payload: PAYLOAD, response_schema: COSTLY_SCHEMA })).status,
    ).toBe(201);
    expect((await on(hostile, 'plugin', `/jobs/${job_id}/running`)).status).toBe(200);
    const hostileEvents = () => readEvents(costlyDb).filter((event) => event.job_id === job_id).length;
    const eventsBefore = hostileEvents();
    const said = { stdout: output.stdout.length, stderr: output.stderr.length };
    let attacking = true;
    let completed = 0;
    let healthy = 0;
    const quietJobs = (async () => {
      while (attacking) {
        const id = randomUUID();
        expect((await on(quiet, 'client', '/jobs', { job_id: id, purpose: 'live_analysis', payload: PAYLOAD })).status).toBe(201);
        expect((await on(quiet, 'plugin', `/jobs/${id}/running`)).status).toBe(200);
        expect((await on(quiet, 'plugin', `/jobs/${id}/result`, { result: insights })).status).toBe(200);
        if (attacking) completed += 1;
      }
    })();
    const health = (async () => {
      while (attacking) {
        expect((await request(`${costlyUrl}/healthz`)).status).toBe(200);
        if (attacking) healthy += 1;
      }
    })();
    // Handled from the start (a loop's failure is reported below, once they stop), and awaited however the rounds end.
    const stopped = Promise.allSettled([quietJobs, health]);
    try {
      for (let round = 0; round < 3; round += 1) {
        const answers = await Promise.all([0, 1].map(() => on(hostile, 'plugin', `/jobs/${job_id}/result`, { result: COSTLY_RESULT })));
        expect(answers.map((answer) => answer.status).sort()).toEqual([422, 429]);
        const byCode = Object.fromEntries(answers.map((answer) => [(answer.body as { error: { code: string } }).error.code, answer]));
        expect(byCode.result_check_too_costly).toMatchObject({
          status: 422,
          body: { error: { message: expect.stringContaining('1000 ms') } },
        });
        expect(byCode.too_many_result_checks?.status).toBe(429);
        expect(Number(byCode.too_many_result_checks!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
    } finally {
      // A loop left running would meet the backend killed after the test: fetch failed, unhandled.
      attacking = false;
      await stopped;
    }
    await Promise.all([quietJobs, health]);
    expect(completed).toBeGreaterThan(0);
    expect(healthy).toBeGreaterThan(0);
    expect(hostileEvents()).toBe(eventsBefore);
    expect({ stdout: output.stdout.slice(said.stdout), stderr: output.stderr.slice(said.stderr) }).toEqual({ stdout: '', stderr: '' });
    // The job stays open: a conforming result, checked in a thread too, completes it.
    expect((await on(hostile, 'plugin', `/jobs/${job_id}/result`, { result: { a: 'a'.repeat(5000) } })).status).toBe(200);
    expect((await on(hostile, 'client', `/jobs/${job_id}`)).body).toMatchObject({ state: 'completed' });
  });
});
