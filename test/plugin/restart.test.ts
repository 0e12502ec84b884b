/** What the plugin's own log makes of a stop or a SIGKILL: every job ends exactly once, none is run twice to completion. */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { start as startProcess, useChildFolder } from '../support/child.js';
import { SimulatedClock } from '../support/clock.js';
import { readEvents } from '../support/log.js';
import { FakeBackend, INTEGRATION, makeJob, RELAY_TOKEN } from './fake-backend.js';
import { answering, hanging, usePlugins } from './fixture.js';

describe('in process', () => {
  const fixture = usePlugins();

  it('stop() lets a running job finish within its grace, and posts its result', async () => {
    const clock = new SimulatedClock(Date.now());
    let answer: (result: Record<string, unknown>) => void = () => {};
    const plugin = await fixture.start({
      clock,
      stopGraceMs: 5_000,
      reasoner: { name: 'slow', reason: () => new Promise((resolve) => (answer = resolve)) },
    });
    const backend = fixture.backend();
    await backend.until(() => backend.streams === 1, 'the stream');
    const job = makeJob(clock.now());
    backend.send(job);
    await backend.until(() => plugin.status().running.length === 1 && plugin.status().jobs[job.job_id as string] === 'started', 'the run');
    const stopped = plugin.stop();
    await backend.until(() => backend.streams === 0, 'the stream closed');
    answer({ insights: [] });
    await stopped;
    expect(backend.resultsOf(job.job_id as string)).toEqual([{ result: { insights: [] } }]);
  });

  it('a job cut off by stop() is run again by the next start, and one whose deadline passed meanwhile is failed deadline_exceeded', async () => {
    const clock = new SimulatedClock(Date.now());
    const { plugin: first, backend } = await fixture.open({ clock, reasoner: hanging() });
    const [soon, later] = [makeJob(clock.now(), {}, 10_000), makeJob(clock.now(), {}, 60_000)];
    backend.send(soon!);
    backend.send(later!);
    await backend.until(
      () => first.status().jobs[later!.job_id as string] === 'started' && first.status().jobs[soon!.job_id as string] === 'started',
      'both running',
    );
    await first.stop();
    expect(backend.results).toHaveLength(0);
    clock.increment(10_000);
    const reasoner = answering();
    await fixture.start({ clock, reasoner });
    await backend.until(() => backend.results.length === 2, 'both outcomes');
    expect(backend.resultsOf(soon!.job_id as string)).toEqual([{ error: { code: 'deadline_exceeded', message: expect.any(String) } }]);
    expect(backend.resultsOf(later!.job_id as string)).toEqual([{ result: expect.any(Object) }]);
    expect(reasoner.calls.map((c) => c.job_id)).toEqual([later!.job_id]);
  });

  it('resumes after a restart from the cursor of the last job it logged', async () => {
    const { plugin: first, backend } = await fixture.open({ reasoner: answering() });
    const cursor = backend.send(makeJob(Date.now()));
    await backend.until(() => backend.results.length === 1, 'the result');
    await first.stop();
    await fixture.start({ reasoner: answering() });
    await backend.until(() => backend.connects.length === 2, 'the second stream');
    expect(backend.connects[1]!.lastEventId).toBe(cursor);
  });
});

describe('a real plugin process, SIGKILLed mid-job', () => {
  const folder = useChildFolder();
  const CHILD = fileURLToPath(new URL('./plugin-child.mjs', import.meta.url));
  let backend: FakeBackend | undefined;
  afterEach(async () => {
    await backend?.close();
  });

  async function startChild(db: string, env: Record<string, string> = {}) {
    const started = startProcess(
      [],
      { PLUGIN_BACKEND: backend!.url, PLUGIN_INTEGRATION: INTEGRATION, PLUGIN_TOKEN: RELAY_TOKEN, PLUGIN_DB: db, ...env },
      CHILD,
    );
    await backend!.until(() => started.output.stdout.includes('{"ready":true}') || started.child.exitCode !== null, 'the child ready');
    expect(started.output.stdout, started.output.stderr).toContain('{"ready":true}');
    return started;
  }

  it('after a restart, the cut-off job is completed once and the finished-but-unposted one is posted', async () => {
    backend = await FakeBackend.start();
    const db = join(folder(), 'plugin.db');
    const cutOff = makeJob(Date.now(), { payload: { session_id: 's', transcript: [{ speaker: 'a', text: 'x' }], hang: true } }, 60_000);
    const unposted = makeJob(Date.now(), {}, 60_000);
    // The first result POST for `unposted` is never answered: the plugin dies waiting for it.
    backend.resultAnswers.set(unposted.job_id as string, ['hang']);

    const first = await startChild(db, { PLUGIN_HANG: '1' });
    await backend.until(() => backend!.streams === 1, 'the first stream');
    backend.send(unposted);
    backend.send(cutOff);
    await backend.until(
      () => backend!.resultsOf(unposted.job_id as string).length === 1 && backend!.running.includes(cutOff.job_id as string),
      'one posting, one running',
    );
    first.child.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });

    const second = await startChild(db);
    await backend.until(() => backend!.streams === 1, 'the second stream');
    // At least once: the backend delivers both again.
    backend.send(unposted);
    backend.send(cutOff);
    await backend.until(
      () => backend!.resultsOf(cutOff.job_id as string).length >= 1 && backend!.resultsOf(unposted.job_id as string).length >= 2,
      'both posted',
    );
    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });

    for (const job of [cutOff, unposted]) {
      const posted = backend.resultsOf(job.job_id as string);
      expect(posted[0]).toEqual({ result: { insights: [{ text: `answer to ${job.job_id}`, kind: 'fact', confidence: 1 }] } });
      // Every POST carries the one outcome the log holds.
      expect(new Set(posted.map((body) => JSON.stringify(body))).size).toBe(1);
    }
    const events = readEvents(db);
    const finished = (id: unknown) => events.filter((e) => e.type === 'plugin.job_finished' && e.job_id === id);
    expect(finished(cutOff.job_id)).toHaveLength(1);
    expect(finished(unposted.job_id)).toHaveLength(1);
    expect(
      events
        .filter((e) => e.type === 'plugin.job_closed')
        .map((e) => [e.job_id, e.reason])
        .sort(),
    ).toEqual(
      [
        [cutOff.job_id, 'posted'],
        [unposted.job_id, 'posted'],
      ].sort(),
    );
  });
});
