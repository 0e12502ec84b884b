/** The plugin's pure pieces: the SSE parser, the fold of its log (an older plugin's log included), the backoff. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BACKOFF, fullJitter } from '../../protocol/backoff.js';
import { evolvePlugin, initialPluginState, type PluginState } from '../../engine/reasoning/plugin-log.js';
import type { PluginEvent } from '../../machines/reasoning/plugin-job-events.js';
import { pluginJobStage } from '../../machines/reasoning/plugin-job.js';
import { JOB_ERRORS } from '../../protocol/errors.js';
import { SseParser } from '../../protocol/sse-parser.js';

describe('SseParser', () => {
  it('reads frames split anywhere, CRLF, CR or LF, skipping comments', () => {
    const parser = new SseParser();
    const text = ': open\r\n\r\nid: 7\r\ndata: {"a":\r\ndata: 1}\r\n\r\n: keep-alive\n\nevent: superseded\rdata: {"type":"superseded"}\r\r';
    const expected = [
      { id: '7', event: 'message', data: '{"a":\n1}' },
      { event: 'superseded', data: '{"type":"superseded"}' },
    ];
    expect([...text].flatMap((char) => parser.feed(char))).toEqual(expected);
    expect(new SseParser().feed(text)).toEqual(expected);
  });

  it('dispatches nothing for a frame without data, and takes no id with a NUL', () => {
    const parser = new SseParser();
    expect(parser.feed('id: 1\n\nid: a\0b\ndata:x\n\n')).toEqual([{ event: 'message', data: 'x' }]);
  });
});

describe('the fold of the plugin log', () => {
  const job_id = '3f1c6f44-6a3e-4b5e-9b43-2f1d1c7b9a10';
  const received: PluginEvent = {
    type: 'plugin.job_received',
    job_id,
    job: { job_id, deadline_at: '2026-01-01T00:00:30.000Z' },
    cursor: '5',
    at: 1,
  };
  const job = (state: PluginState, id = job_id) => {
    const snapshot = state.jobs.get(id)!;
    return { stage: pluginJobStage(snapshot), ...snapshot.context };
  };

  it('follows a job from received to closed, keeping the newest outcome and cursor', () => {
    const state = initialPluginState();
    const steps: PluginEvent[] = [
      received,
      { type: 'plugin.job_started', job_id, at: 2 },
      { type: 'plugin.job_finished', job_id, outcome: { result: { a: 1 } }, at: 3 },
      { type: 'plugin.job_finished', job_id, outcome: { error: { code: 'invalid_result', message: 'm' } }, at: 4 },
      { type: 'plugin.job_closed', job_id, reason: 'posted', status: 200, at: 5 },
    ];
    const stages = steps.map((event) => {
      evolvePlugin(state, event);
      return job(state).stage;
    });
    expect(stages).toEqual(['received', 'started', 'finished', 'finished', 'closed']);
    expect(job(state)).toMatchObject({
      deadline_at: Date.UTC(2026, 0, 1, 0, 0, 30),
      outcome: { error: { code: 'invalid_result' } },
      closed_at: 5,
    });
    expect(state.cursor).toBe('5');
  });

  it('takes the moment of receipt as the deadline of an envelope without a readable one', () => {
    const state = initialPluginState();
    evolvePlugin(state, { ...received, job: { job_id, deadline_at: 'soon' }, at: 42 });
    expect(job(state).deadline_at).toBe(42);
  });

  it('folds a log as the plugin wrote it before its jobs were a statechart to the state its fold gave', () => {
    // Rows of a plugin log written before the statechart (its `data` column), every shape it logged.
    const [a, b, c, d] = [
      '0b6a1b7e-1f0c-4c1e-8a39-5d1e2f3a4b5c',
      '1c7b2c8f-2a1d-4d2f-9b4a-6e2f3a4b5c6d',
      '2d8c3d9a-3b2e-4e3a-8c5b-7f3a4b5c6d7e',
      '3e9d4eab-4c3f-4f4b-9d6c-8a4b5c6d7e8f',
    ];
    const rows = [
      `{"type":"plugin.job_received","job_id":"${a}","job":{"job_id":"${a}","deadline_at":"2026-01-01T00:00:30.000Z","byo":false},"cursor":"1","at":10}`,
      `{"type":"plugin.job_started","job_id":"${a}","at":11}`,
      `{"type":"plugin.job_finished","job_id":"${a}","outcome":{"result":{"insights":[]}},"at":12}`,
      `{"type":"plugin.job_closed","job_id":"${a}","reason":"posted","status":200,"at":13}`,
      `{"type":"plugin.job_received","job_id":"${b}","job":{"job_id":"${b}","deadline_at":"2026-01-01T00:01:00.000Z"},"cursor":"2","at":14}`,
      `{"type":"plugin.job_closed","job_id":"${b}","reason":"settled","status":409,"at":15}`,
      `{"type":"plugin.jobs_forgotten","job_ids":["${a}"],"dedupe":{"${a}":1767225630000},"at":16}`,
      `{"type":"plugin.job_received","job_id":"${c}","job":{"job_id":"${c}"},"cursor":"3","at":17}`,
      `{"type":"plugin.job_finished","job_id":"${c}","outcome":{"error":{"code":"deadline_exceeded","message":"m"}},"at":18}`,
      `{"type":"plugin.job_closed","job_id":"${c}","reason":"gave_up","at":19}`,
      `{"type":"plugin.job_received","job_id":"${d}","job":{"job_id":"${d}"},"at":20}`,
      `{"type":"plugin.job_started","job_id":"${d}","at":21}`,
    ];
    const state = initialPluginState();
    for (const row of rows) evolvePlugin(state, JSON.parse(row) as PluginEvent);
    // What the fold before the statechart held: each job's stage, envelope, deadline, outcome and closing time.
    expect([...state.jobs.keys()]).toEqual([b, c, d]);
    expect(job(state, b)).toMatchObject({
      stage: 'closed',
      deadline_at: Date.UTC(2026, 0, 1, 0, 1),
      outcome: undefined,
      closed_at: 15,
      reason: 'settled',
    });
    expect(job(state, c)).toMatchObject({
      stage: 'closed',
      deadline_at: 17,
      outcome: { error: { code: 'deadline_exceeded' } },
      closed_at: 19,
      reason: 'gave_up',
    });
    expect(job(state, d)).toMatchObject({
      stage: 'started',
      job: { job_id: d },
      deadline_at: 20,
      outcome: undefined,
      closed_at: undefined,
    });
    expect([...state.forgotten]).toEqual([[a, 1767225630000]]);
    expect(state.cursor).toBe('3');
  });
});

describe('fullJitter', () => {
  it('is random × min(30 s, 250 ms × 2^(failures-1))', () => {
    expect([1, 2, 3, 7, 8, 100].map((n) => fullJitter(n, () => 0.5))).toEqual([125, 250, 500, 8_000, 15_000, 15_000]);
    expect(fullJitter(1, () => 0)).toBe(0);
    expect(fullJitter(50, () => 0.9999)).toBeLessThan(BACKOFF.capMs);
  });
});

describe("the plugin's job error codes", () => {
  it('are the ones PROTOCOL.md 6d lists, and each is raised by the plugin or its decider', () => {
    const text = readFileSync(new URL('../../PROTOCOL.md', import.meta.url), 'utf8');
    const section = text.slice(text.indexOf('## 6d.'));
    const table = section.slice(section.indexOf('| code | when |'));
    const codes = table
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .map((line) => /^\| `([a-z_]+)`/.exec(line)![1]);
    // The plugin's own codes are job error codes of the catalogue.
    expect(Object.keys(JOB_ERRORS)).toEqual(expect.arrayContaining(codes));
    const files = [
      'adapters/plugin/intake.ts',
      'adapters/plugin/run.ts',
      'adapters/plugin/jobs.ts',
      'machines/reasoning/plugin-job-decider.ts',
    ];
    const sources = files.map((file) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')).join('\n');
    for (const code of codes) expect(sources).toContain(`'${code}'`);
  });
});
