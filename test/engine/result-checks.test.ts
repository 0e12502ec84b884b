/**
 * Checking a plain result against its job's schema (PROTOCOL.md 6.12): the engine's seam (a checker's
 * verdict is the answer, nothing is logged for a refusal, the job stays open), and the relay's checker,
 * which checks small results at once and costly ones in worker threads, within a time budget (past it the
 * thread is terminated and replaced), on a queue that holds one check per integration and has a bound.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ResultChecks } from '../../adapters/backend/result-checks.js';
import { backendSeams } from '../../adapters/backend/seams.js';
import { ReasoningEngine } from '../../engine/reasoning/engine.js';
import type { ResultCheck, ResultChecker, ResultVerdict } from '../../engine/reasoning/result-check.js';
import { backendStreamOf, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { jobState } from '../../machines/reasoning/job.js';
import { JobCreateBody, PURPOSES, jsonBytes, jsonSchemaOf } from '../../protocol/index.js';
import { EventLog } from '../../storage/event-log.js';
import { SimulatedClock } from '../support/clock.js';
import { tempDir } from '../support/host.js';
import { countEvents } from '../support/log.js';
import { FakeSocket } from '../support/socket.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * 480 `maxLength` (within the bounds of 6.10) on one string of 16 MiB: several times the budget below. On one
 * string of 4 MiB it took 2 to 4 s in a fresh thread here (as V8 optimizes the loop early or late), about the budget.
 */
const COSTLY_SCHEMA = {
  type: 'object',
  properties: { a: { allOf: Array.from({ length: 480 }, (_, i) => ({ maxLength: 20_000_000 + i })) } },
};
const COSTLY_RESULT = { a: 'a'.repeat(16 * 1024 * 1024) };
/** Costly by the estimate (more than 1 Mi members × bytes), quick to check. */
const CONFORMING = { a: 'a'.repeat(5000) };
/**
 * The budget counts the schema's compiling in a fresh thread too: on two busy cores that alone took over
 * a second, and the conforming check failed as too costly. Three seconds leave it room many times over,
 * while the costly check (480 `maxLength` over 16 MiB, 8 s or more) still runs past it.
 */
const BUDGET_MS = 3000;
const SMALL_SCHEMA = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] };
const insights = { insights: [{ text: 'Ask about the budget.', kind: 'question', confidence: 0.8 }] };

const checkOf = (integrationId: string, schema: Record<string, unknown>, result: Record<string, unknown>): ResultCheck => ({
  integrationId,
  schema,
  result,
  bytes: jsonBytes(result),
});

function checks(limits: ConstructorParameters<typeof ResultChecks>[0]): ResultChecks {
  const made = new ResultChecks(limits);
  cleanups.push(() => made.close());
  return made;
}

describe("the relay's result checker", () => {
  it("checks a purpose's result against its own schema at once, on the caller's thread, however large", () => {
    const checker = checks({});
    const verdict = checker.check(checkOf('a', jsonSchemaOf(PURPOSES.live_analysis.result), { ...insights, extra: 'x'.repeat(500_000) }));
    expect(verdict).toEqual({ outcome: 'checked', problem: undefined });
    const small = checker.check(checkOf('a', SMALL_SCHEMA, { n: 'one' }));
    expect(small).toEqual({ outcome: 'checked', problem: 'result/n must be number' });
  });

  it('runs a costly check in a thread while the event loop goes on; past its budget the thread is terminated and replaced, and the next check is answered', async () => {
    const checker = checks({ timeoutMs: BUDGET_MS, workers: 1 });
    const running = checker.check(checkOf('a', COSTLY_SCHEMA, COSTLY_RESULT));
    expect(running).toBeInstanceOf(Promise);
    let ticks = 0;
    const ticking = setInterval(() => (ticks += 1), 10);
    const verdict = await running;
    clearInterval(ticking);
    expect(verdict).toMatchObject({ outcome: 'too_costly', message: expect.stringContaining(`${BUDGET_MS} ms`) });
    expect(ticks).toBeGreaterThan(0);
    // One thread: had the old one gone on checking, this check would wait behind it past its own budget.
    const next = checker.check(checkOf('a', COSTLY_SCHEMA, CONFORMING));
    expect(next).toBeInstanceOf(Promise);
    expect(await next).toEqual({ outcome: 'checked', problem: undefined });
  });

  it('holds one costly check per integration, and a bounded queue: past either, busy with a Retry-After', async () => {
    const checker = checks({ timeoutMs: BUDGET_MS, workers: 1, maxQueued: 1 });
    const first = checker.check(checkOf('a', COSTLY_SCHEMA, COSTLY_RESULT));
    expect(checker.check(checkOf('a', COSTLY_SCHEMA, COSTLY_RESULT))).toMatchObject({
      outcome: 'busy',
      retry_after_s: expect.any(Number),
      message: expect.stringContaining('this integration'),
    });
    const queued = checker.check(checkOf('b', COSTLY_SCHEMA, COSTLY_RESULT));
    const over = checker.check(checkOf('c', COSTLY_SCHEMA, COSTLY_RESULT));
    expect(over).toMatchObject({ outcome: 'busy', message: expect.stringContaining('the most costly result checks') });
    expect((over as Extract<ResultVerdict, { outcome: 'busy' }>).retry_after_s).toBeGreaterThanOrEqual(1);
    // A small check is never queued.
    expect(checker.check(checkOf('c', SMALL_SCHEMA, { n: 1 }))).toEqual({ outcome: 'checked', problem: undefined });
    expect(await first).toMatchObject({ outcome: 'too_costly' });
    expect(await queued).toMatchObject({ outcome: 'too_costly' });
    // Both ended: the integrations' places are free again.
    expect(await checker.check(checkOf('a', COSTLY_SCHEMA, CONFORMING))).toEqual({ outcome: 'checked', problem: undefined });
  });
});

describe("the engine's seam: a plain result's verdict", () => {
  async function runningJob(checker: ResultChecker) {
    const dir = tempDir();
    const db = join(dir, 'backend.db');
    const log = EventLog.open<BackendEvent>({ path: db, streamOf: backendStreamOf });
    const backend = await ReasoningEngine.start(backendSeams(log, { clock: new SimulatedClock() }), { resultChecker: checker });
    cleanups.push(async () => {
      await backend.close();
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const created = await backend.integrations.create('assistant-relay');
    if ('refused' in created) throw new Error(created.refused.message);
    const { integration_id } = created;
    await backend.openStream(integration_id, undefined, () => new FakeSocket());
    const body = JobCreateBody.parse({
      job_id: randomUUID(),
      purpose: 'live_analysis',
      payload: { session_id: 's', transcript: [{ speaker: 'a', text: 'hi' }] },
    });
    await backend.createJob(integration_id, body);
    await new Promise((resolve) => setImmediate(resolve));
    await backend.running(integration_id, body.job_id);
    return { backend, integration_id, job_id: body.job_id, db };
  }

  it.each([
    [
      'too costly',
      { outcome: 'too_costly', message: 'too long' },
      { outcome: 'invalid', code: 'result_check_too_costly', message: 'too long' },
    ],
    [
      'busy',
      { outcome: 'busy', retry_after_s: 3, message: 'wait' },
      { outcome: 'busy', code: 'too_many_result_checks', retry_after_s: 3, message: 'wait' },
    ],
  ] as const)('%s: answered so, nothing logged, the job stays open for a result that is checked', async (_what, refusal, answer) => {
    const verdicts: ResultVerdict[] = [refusal, { outcome: 'checked', problem: undefined }];
    const asked: ResultCheck[] = [];
    const { backend, integration_id, job_id, db } = await runningJob({ check: (check) => (asked.push(check), verdicts.shift()!) });
    const before = countEvents(db);
    expect(await backend.result(integration_id, job_id, { result: insights })).toMatchObject(answer);
    expect(countEvents(db)).toBe(before);
    expect(jobState((await backend.committedJob(integration_id, job_id))!)).toBe('running');
    expect((await backend.result(integration_id, job_id, { result: insights })).outcome).toBe('completed');
    expect(asked[1]).toMatchObject({
      integrationId: integration_id,
      result: insights,
      bytes: jsonBytes(insights),
      schema: jsonSchemaOf(PURPOSES.live_analysis.result),
    });
  });

  it("a checker's problem is the result's: 422 result_invalid; a failure report and a settled job's result are never checked", async () => {
    let asked = 0;
    const { backend, integration_id, job_id } = await runningJob({
      check: () => ((asked += 1), { outcome: 'checked', problem: 'result/x is wrong' }),
    });
    expect(await backend.result(integration_id, job_id, { result: insights })).toMatchObject({
      outcome: 'invalid',
      code: 'result_invalid',
      message: 'result/x is wrong',
    });
    expect((await backend.result(integration_id, job_id, { error: { code: 'reasoner_error', message: 'no' } })).outcome).toBe('failed');
    expect((await backend.result(integration_id, job_id, { result: insights })).outcome).toBe('settled');
    expect(asked).toBe(1);
  });
});
