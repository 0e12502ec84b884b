/** The plugin's pure pieces: the SSE parser, the fold of its log, the backoff. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BACKOFF, fullJitter } from '../../protocol/backoff.js';
import { evolvePlugin, initialPluginState, type PluginEvent } from '../../adapters/plugin/events.js';
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
  const received: PluginEvent = { type: 'plugin.job_received', job_id, job: { job_id, deadline_at: '2026-01-01T00:00:30.000Z' }, cursor: '5', at: 1 };

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
      return state.jobs.get(job_id)!.stage;
    });
    expect(stages).toEqual(['received', 'started', 'finished', 'finished', 'closed']);
    expect(state.jobs.get(job_id)).toMatchObject({ deadline_at: Date.UTC(2026, 0, 1, 0, 0, 30), outcome: { error: { code: 'invalid_result' } } });
    expect(state.cursor).toBe('5');
  });

  it('takes the moment of receipt as the deadline of an envelope without a readable one', () => {
    const state = initialPluginState();
    evolvePlugin(state, { ...received, job: { job_id, deadline_at: 'soon' }, at: 42 });
    expect(state.jobs.get(job_id)!.deadline_at).toBe(42);
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
  it('are the ones PROTOCOL.md 6d lists, and each is raised in adapters/plugin', () => {
    const text = readFileSync(new URL('../../PROTOCOL.md', import.meta.url), 'utf8');
    const section = text.slice(text.indexOf('## 6d.'));
    const table = section.slice(section.indexOf('| code | when |'));
    const codes = table.split('\n').filter((line) => line.startsWith('| `')).map((line) => /^\| `([a-z_]+)`/.exec(line)![1]);
    // The plugin's own codes are job error codes of the catalogue.
    expect(Object.keys(JOB_ERRORS)).toEqual(expect.arrayContaining(codes));
    const sources = ['intake.ts', 'run.ts', 'jobs.ts'].map((file) => readFileSync(new URL(`../../adapters/plugin/${file}`, import.meta.url), 'utf8')).join('\n');
    for (const code of codes) expect(sources).toContain(`'${code}'`);
  });
});
