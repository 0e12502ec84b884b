/** The plugin runs each job once and always posts an outcome: over real loopback HTTP against a fake backend. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ReasonerError } from '../../adapters/reasoners/reasoner.js';
import { readEvents } from '../support/log.js';
import { SimulatedClock } from '../support/clock.js';
import { makeJob } from './fake-backend.js';
import { answering, capturingLogger, closed, hanging, throwing, usePlugins } from './fixture.js';

const fixture = usePlugins();

describe('a job', () => {
  it('runs once its running POST is accepted, and its checked result is posted', async () => {
    const reasoner = answering();
    const { plugin, backend } = await fixture.open({ reasoner });
    expect(backend.heartbeats[0]).toMatchObject({
      provider_kind: 'test-provider',
      schema_versions: { min: 1, max: 1 },
      envelope_versions: { min: 1, max: 1 },
      status: 'ready',
      running_job_ids: [],
      reasoner: { name: 'answering' },
    });
    const job = makeJob(Date.now());
    backend.send(job);
    await backend.until(() => backend.results.length === 1, 'the result');
    expect(backend.running).toEqual([job.job_id]);
    expect(backend.results[0]).toEqual({
      job_id: job.job_id,
      body: { result: { insights: [{ text: 'said hello', kind: 'fact', confidence: 1 }] } },
    });
    expect(reasoner.calls[0]).toMatchObject({
      job_id: job.job_id,
      purpose: 'live_analysis',
      payload: job.payload,
      deadline_at: Date.parse(job.deadline_at as string),
    });
    await backend.until(closed(plugin, job), 'the job closed');
    await plugin.stop();
    expect(readEvents(join(fixture.dir(), 'plugin.db')).map((e) => e.type)).toEqual([
      'plugin.job_received',
      'plugin.job_started',
      'plugin.job_finished',
      'plugin.job_closed',
    ]);
  });

  it('delivered twice runs once; delivered again once closed, it is answered again from the record', async () => {
    const reasoner = answering();
    const { backend } = await fixture.open({ reasoner });
    const job = makeJob(Date.now());
    backend.send(job);
    backend.send(job);
    await backend.until(() => backend.results.length === 1, 'the result');
    backend.send(job);
    await backend.until(() => backend.results.length === 2, 'the result again');
    expect(reasoner.calls).toHaveLength(1);
    expect(backend.running).toEqual([job.job_id]);
    expect(backend.results[1]).toEqual(backend.results[0]);
  });

  it('is not run when its running POST is answered 409 job_settled (cancelled or expired meanwhile)', async () => {
    const reasoner = answering();
    const { plugin, backend } = await fixture.open({ reasoner });
    const job = makeJob(Date.now());
    backend.runningAnswers.set(job.job_id as string, 409);
    backend.send(job);
    await backend.until(closed(plugin, job), 'the job closed');
    expect(reasoner.calls).toHaveLength(0);
    expect(backend.results).toHaveLength(0);
  });

  it('waits its turn beyond maxConcurrentJobs, and heartbeats name the jobs running', async () => {
    const clock = new SimulatedClock(Date.now());
    const reasoner = hanging();
    const { plugin, backend } = await fixture.open({ reasoner, clock, maxConcurrentJobs: 1 });
    const [first, second] = [makeJob(clock.now()), makeJob(clock.now(), {}, 60_000)];
    backend.send(first!);
    backend.send(second!);
    await backend.until(() => reasoner.calls.length === 1 && plugin.status().queued.length === 1, 'one running, one queued');
    clock.increment(30_000);
    await backend.until(() => backend.heartbeats.length === 2, 'the second heartbeat');
    expect(backend.heartbeats[1]).toMatchObject({ status: 'busy', running_job_ids: [first!.job_id] });
    await backend.until(() => reasoner.calls.length === 2, 'the second job started once the first ended');
    expect(backend.resultsOf(first!.job_id as string)).toEqual([{ error: { code: 'deadline_exceeded', message: expect.any(String) } }]);
  });
});

describe('options', () => {
  it.each([
    ['a backend URL that is not http(s)', { backendUrl: 'ftp://127.0.0.1/' }, /http or https/],
    ['an empty integration id', { integrationId: '' }, /integration id/],
    ['no job slot', { maxConcurrentJobs: 0 }, /maxConcurrentJobs/],
  ])('%s: refused at once', async (_what, options, message) => {
    await expect(fixture.start({ reasoner: answering(), ...options })).rejects.toThrow(message);
  });

  it('a log another plugin holds: refused with event_log_locked', async () => {
    await fixture.start({ reasoner: answering() });
    await expect(fixture.start({ reasoner: answering() })).rejects.toMatchObject({ code: 'event_log_locked' });
  });
});

describe('a failed job is posted, never dropped', () => {
  const failures: Array<[string, Record<string, unknown>, string]> = [
    ['schema_version 2', { schema_version: 2 }, 'unsupported_version'],
    ['envelope_version 0', { envelope_version: 0 }, 'unsupported_version'],
    [
      'a BYO payload, to a plugin with no keys',
      { byo: true, payload: { kid: 'AAAAAAAAAAAA', nonce: 'A'.repeat(32), ciphertext: 'A'.repeat(22) } },
      'byo_unsupported',
    ],
    ['an envelope without a purpose', { purpose: undefined }, 'invalid_job'],
    ['a response_schema that is not a schema', { response_schema: { type: 12 } }, 'invalid_job'],
    // RE2 runs a pattern in linear time, and cannot run a lookaround or a backreference: it is not checked with another engine.
    [
      'a response_schema with a lookahead',
      { response_schema: { type: 'object', properties: { a: { type: 'string', pattern: '^(?!admin)' } } } },
      'unsupported_response_schema',
    ],
    [
      'a recursive response_schema',
      { response_schema: { $defs: { node: { allOf: [{ $ref: '#/$defs/node' }] } }, $ref: '#/$defs/node' } },
      'unsupported_response_schema',
    ],
  ];
  it.each(failures)('%s: failed %s, not run', async (_what, overrides, code) => {
    const reasoner = answering();
    const { backend } = await fixture.open({ reasoner });
    const job = makeJob(Date.now(), overrides);
    backend.send(job);
    await backend.until(() => backend.results.length === 1, 'the failure');
    expect(backend.results[0]!.body).toEqual({ error: { code, message: expect.any(String) } });
    expect(reasoner.calls).toHaveLength(0);
    expect(backend.running).toHaveLength(0);
  });

  it('a job whose deadline passed before it arrived: failed deadline_exceeded, not run', async () => {
    const reasoner = answering();
    const { backend } = await fixture.open({ reasoner });
    backend.send(makeJob(Date.now(), {}, -1));
    await backend.until(() => backend.results.length === 1, 'the failure');
    expect(backend.results[0]!.body).toMatchObject({ error: { code: 'deadline_exceeded' } });
    expect(reasoner.calls).toHaveLength(0);
  });

  it('versions the plugin is configured for are run', async () => {
    const reasoner = answering();
    const { backend } = await fixture.open({ reasoner, schemaVersions: { min: 1, max: 2 } });
    backend.send(makeJob(Date.now(), { schema_version: 2 }));
    await backend.until(() => backend.results.length === 1, 'the result');
    expect(backend.results[0]!.body).toHaveProperty('result');
    expect(backend.heartbeats[0]).toMatchObject({ schema_versions: { min: 1, max: 2 } });
  });

  it('a version between two it handles that is not a whole number: failed unsupported_version, not run', async () => {
    const reasoner = answering();
    const { backend } = await fixture.open({ reasoner, schemaVersions: { min: 1, max: 2 } });
    backend.send(makeJob(Date.now(), { schema_version: 1.5 }));
    await backend.until(() => backend.results.length === 1, 'the failure');
    expect(backend.results[0]!.body).toMatchObject({ error: { code: 'unsupported_version' } });
    expect(reasoner.calls).toHaveLength(0);
  });

  it('a frame without a job_id is ignored, and the stream goes on', async () => {
    const { backend } = await fixture.open({ reasoner: answering() });
    backend.send({ hello: 'world' });
    const job = makeJob(Date.now());
    backend.send(job);
    await backend.until(() => backend.results.length === 1, 'the result');
    expect(backend.results[0]!.job_id).toBe(job.job_id);
  });

  it.each([
    [
      "a ReasonerError: with the reasoner's code",
      new ReasonerError('model_unavailable', 'the model is not loaded'),
      { code: 'model_unavailable', message: 'the model is not loaded' },
    ],
    ['any other throw: reasoner_error', new TypeError('boom'), { code: 'reasoner_error', message: 'boom' }],
  ])('a reasoner that throws %s', async (_what, error, posted) => {
    const { backend } = await fixture.open({ reasoner: throwing(error) });
    backend.send(makeJob(Date.now()));
    await backend.until(() => backend.results.length === 1, 'the failure');
    expect(backend.results[0]!.body).toEqual({ error: posted });
  });

  it('a result that does not follow response_schema is not posted as a result: invalid_result, with what is wrong', async () => {
    const { backend } = await fixture.open({ reasoner: answering() });
    backend.send(
      makeJob(Date.now(), {
        payload: { session_id: 's', transcript: [], answer: { insights: [{ text: 'x', kind: 'rumour', confidence: 2 }] } },
      }),
    );
    await backend.until(() => backend.results.length === 1, 'the failure');
    expect(backend.results[0]!.body).toEqual({
      error: { code: 'invalid_result', message: expect.stringContaining('result/insights/0/kind') },
    });
  });

  it('a pattern that backtracks without end runs on RE2: the answer made to trip it is checked at once, invalid_result', async () => {
    const { backend } = await fixture.open({ reasoner: answering() });
    // 40 `a` and a `!`: a backtracking engine tries 2^40 ways to split them before it gives up.
    const answer = { a: `${'a'.repeat(40)}!` };
    const response_schema = { type: 'object', properties: { a: { type: 'string', pattern: '^(a+)+$' } }, required: ['a'] };
    backend.send(makeJob(Date.now(), { response_schema, payload: { session_id: 's', transcript: [], answer } }));
    await backend.until(() => backend.results.length === 1, 'the failure');
    expect(backend.results[0]!.body).toEqual({
      error: { code: 'invalid_result', message: expect.stringContaining('must match pattern "^(a+)+$"') },
    });
  });

  it('the deadline aborts the reasoner, and deadline_exceeded is posted', async () => {
    const clock = new SimulatedClock(Date.now());
    const reasoner = hanging();
    const { backend } = await fixture.open({ reasoner, clock });
    const job = makeJob(clock.now(), {}, 5_000);
    backend.send(job);
    await backend.until(() => reasoner.calls.length === 1, 'the run');
    clock.increment(4_999);
    expect(reasoner.calls[0]!.signal.aborted).toBe(false);
    clock.increment(1);
    await backend.until(() => reasoner.calls[0]!.signal.aborted, 'the abort');
    await backend.until(() => backend.results.length === 1, 'the failure');
    expect(backend.results[0]!.body).toEqual({ error: { code: 'deadline_exceeded', message: expect.any(String) } });
  });

  it('a reasoner that ignores its signal does not hold the job past its deadline', async () => {
    const clock = new SimulatedClock(Date.now());
    const reasoner = hanging({ deaf: true });
    const { backend } = await fixture.open({ reasoner, clock });
    backend.send(makeJob(clock.now(), {}, 5_000));
    await backend.until(() => reasoner.calls.length === 1, 'the run');
    clock.increment(5_000);
    await backend.until(() => backend.results.length === 1, 'the failure');
    expect(backend.results[0]!.body).toMatchObject({ error: { code: 'deadline_exceeded' } });
  });
});

describe('posting a result', () => {
  it('answered 503 twice, then 200: tried again with backoff until it is taken', async () => {
    const { plugin, backend } = await fixture.open({ reasoner: answering(), random: () => 0.5 });
    const job = makeJob(Date.now());
    backend.resultAnswers.set(job.job_id as string, [{ status: 503 }, { status: 503 }]);
    backend.send(job);
    await backend.until(closed(plugin, job), 'the job closed');
    expect(backend.resultsOf(job.job_id as string)).toHaveLength(3);
    expect(new Set(backend.resultsOf(job.job_id as string).map((b) => JSON.stringify(b))).size).toBe(1);
  });

  it('honours Retry-After, and gives up at the deadline (closed gave_up, logged)', async () => {
    const clock = new SimulatedClock(Date.now());
    const { logger, lines } = capturingLogger();
    // No retention: its timer would be one more on the clock.
    const { plugin, backend } = await fixture.open({ reasoner: answering(), clock, logger, retentionMs: Infinity });
    const job = makeJob(clock.now(), {}, 20_000);
    backend.resultAnswers.set(job.job_id as string, [
      { status: 429, retryAfter: 7 },
      { status: 429, retryAfter: 7 },
      { status: 429, retryAfter: 7 },
    ]);
    backend.send(job);
    // Each wait is armed on the clock beside the heartbeat's timer: two timers pending.
    await backend.until(() => backend.results.length === 1 && clock.pending === 2, 'the first POST, and the wait after it');
    clock.increment(6_999);
    expect(backend.results).toHaveLength(1);
    clock.increment(1);
    await backend.until(() => backend.results.length === 2 && clock.pending === 2, 'the second POST, 7 s later');
    clock.increment(7_000);
    await backend.until(() => backend.results.length === 3, 'the third POST, 7 s later');
    // The next wait would end past the deadline (21 s after receipt > 20 s): no fourth POST.
    await backend.until(closed(plugin, job), 'the job closed');
    expect(backend.results).toHaveLength(3);
    await plugin.stop();
    expect(readEvents(join(fixture.dir(), 'plugin.db')).at(-1)).toMatchObject({ type: 'plugin.job_closed', reason: 'gave_up' });
    expect(lines).toContainEqual(expect.objectContaining({ level: 50, job_id: job.job_id }));
  });

  it('a result the backend refuses as invalid (422) is reported as a failed job instead', async () => {
    const { plugin, backend } = await fixture.open({ reasoner: answering() });
    const job = makeJob(Date.now());
    backend.resultAnswers.set(job.job_id as string, [
      { status: 422, body: { error: { code: 'result_invalid', message: 'result/insights must be array' } } },
    ]);
    backend.send(job);
    await backend.until(closed(plugin, job), 'the job closed');
    expect(backend.resultsOf(job.job_id as string)).toEqual([
      { result: expect.any(Object) },
      { error: { code: 'invalid_result', message: 'result/insights must be array' } },
    ]);
  });

  it("a result over the backend's size bound (413) is reported as a failed job instead", async () => {
    const { plugin, backend } = await fixture.open({ reasoner: answering() });
    const job = makeJob(Date.now());
    const message = "the job's result is 2000000 bytes of JSON, more than the 1048576 this backend takes";
    backend.resultAnswers.set(job.job_id as string, [{ status: 413, body: { error: { code: 'result_too_large', message } } }]);
    backend.send(job);
    await backend.until(closed(plugin, job), 'the job closed');
    expect(backend.resultsOf(job.job_id as string)).toEqual([
      { result: expect.any(Object) },
      { error: { code: 'invalid_result', message } },
    ]);
  });

  it('a run refused because the plugin is refused (403) leaves the job open and unrun; sent again, it runs', async () => {
    const reasoner = answering();
    const { plugin, backend } = await fixture.open({ reasoner });
    const job = makeJob(Date.now());
    const id = job.job_id as string;
    backend.runningAnswers.set(id, 403);
    backend.send(job);
    await backend.until(() => backend.running.length === 1 && plugin.status().running.length === 0, 'the refused run');
    expect([plugin.status().jobs[id], reasoner.calls.length]).toEqual(['refused', 0]);
    backend.runningAnswers.delete(id);
    backend.send(job);
    await backend.until(() => backend.resultsOf(id).length === 1, 'the result');
    expect(reasoner.calls).toHaveLength(1);
  });

  it.each([
    ['409 (the job ended otherwise): closed settled', 409, 'settled'],
    ['400 (any other refusal): closed rejected', 400, 'rejected'],
  ])('%s, no retry', async (_what, status, reason) => {
    const { plugin, backend } = await fixture.open({ reasoner: answering() });
    const job = makeJob(Date.now());
    backend.resultAnswers.set(job.job_id as string, [{ status, body: { error: { code: 'job_settled', message: 'cancelled' } } }]);
    backend.send(job);
    await backend.until(closed(plugin, job), 'the job closed');
    expect(backend.resultsOf(job.job_id as string)).toHaveLength(1);
    await plugin.stop();
    expect(readEvents(join(fixture.dir(), 'plugin.db')).at(-1)).toMatchObject({ type: 'plugin.job_closed', reason, status });
  });
});
