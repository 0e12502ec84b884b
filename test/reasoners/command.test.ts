import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { commandReasoner } from '../../adapters/reasoners/command.js';
import { tempDir } from '../support/host.js';
import { CALL, failureOf, job } from './job.js';

const SCRIPT = fileURLToPath(new URL('./fixtures/reasoner.mjs', import.meta.url));
const program = (...args: string[]) => commandReasoner({ argv: [process.execPath, SCRIPT, ...args], killGraceMs: 300 });

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Whether `pid` still runs: a zombie (dead, its exit status not yet collected by whoever adopted it) does not. */
function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0] !== 'Z';
  } catch {
    return false;
  }
}

async function pidsOnceWritten(file: string): Promise<number[]> {
  while (!existsSync(file) || readFileSync(file, 'utf8') === '') await new Promise((resolve) => setTimeout(resolve, 20));
  return JSON.parse(readFileSync(file, 'utf8')) as number[];
}

describe('the command reasoner', () => {
  it('writes the prompt as JSON to stdin and takes the result from stdout', async () => {
    const request = job('session_summary', CALL, { response_schema: { type: 'object', required: ['prompt'] } });
    const { prompt } = (await program('echo').reason(request)) as { prompt: Record<string, unknown> };
    expect(prompt).toEqual({
      job_id: request.job_id,
      purpose: 'session_summary',
      deadline_at: new Date(request.deadline_at).toISOString(),
      instructions: expect.stringContaining('Summarise a finished call'),
      payload: CALL,
      response_schema: request.response_schema,
    });
  });

  it('returns a good answer', async () => {
    expect(await program('good').reason(job('live_analysis', CALL))).toEqual({
      insights: [{ text: 'Ask about the budget.', kind: 'question', confidence: 0.5 }],
    });
  });

  it('fails invalid_result on output that is not JSON, or that does not follow the schema', async () => {
    expect(await failureOf(program('bad-json').reason(job('live_analysis', CALL)))).toMatchObject({
      name: 'ReasonerError',
      code: 'invalid_result',
      message: expect.stringContaining('did not write one JSON object'),
    });
    expect((await failureOf(program('good').reason(job('session_summary', CALL)))).code).toBe('invalid_result');
  });

  it('fails reasoner_error on a non-zero exit, with the end of its stderr', async () => {
    const failure = await failureOf(program('fail').reason(job('live_analysis', CALL)));
    expect(failure).toMatchObject({
      code: 'reasoner_error',
      message: expect.stringMatching(/exited with status 3: x+\nmodel not found: llama9$/),
    });
    expect(failure.message.length).toBeLessThan(1_200);
  });

  it('fails invalid_result on output past its bound, and kills the program', async () => {
    const reasoner = commandReasoner({ argv: [process.execPath, SCRIPT, 'flood'], maxOutputBytes: 100_000 });
    expect(await failureOf(reasoner.reason(job('live_analysis', CALL)))).toMatchObject({
      code: 'invalid_result',
      message: expect.stringContaining('more than 100000 bytes'),
    });
  });

  it('fails reasoner_unavailable when the program cannot start', async () => {
    const reasoner = commandReasoner({ argv: ['/nonexistent/reasoner'] });
    expect(await failureOf(reasoner.reason(job('live_analysis', CALL)))).toMatchObject({
      code: 'reasoner_unavailable',
      message: 'could not start /nonexistent/reasoner: ENOENT',
    });
  });

  it.each([
    ['ends on SIGTERM', []],
    ['ignores SIGTERM', ['stubborn']],
  ])('kills a program that hangs past the deadline, and what it started (one that %s): deadline_exceeded', async (_how, extra) => {
    const dir = tempDir();
    dirs.push(dir);
    const pidFile = join(dir, 'pids');
    const running = program('hang', pidFile, ...extra).reason(job('live_analysis', CALL, { deadlineMs: 1_000 }));
    const pids = await pidsOnceWritten(pidFile);
    expect((await failureOf(running)).code).toBe('deadline_exceeded');
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
  });

  it('does not start a program for a job whose deadline has passed', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const pidFile = join(dir, 'pids');
    expect((await failureOf(program('hang', pidFile).reason(job('live_analysis', CALL, { deadlineMs: -1 })))).code).toBe(
      'deadline_exceeded',
    );
    expect(existsSync(pidFile)).toBe(false);
  });

  it('kills it when the plugin stops before the deadline: interrupted', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const pidFile = join(dir, 'pids');
    const stop = new AbortController();
    const running = program('hang', pidFile).reason(job('live_analysis', CALL, { signal: stop.signal }));
    const pids = await pidsOnceWritten(pidFile);
    stop.abort();
    expect((await failureOf(running)).code).toBe('interrupted');
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });
});
