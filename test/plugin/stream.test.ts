/** The subscription: resume, backoff with full jitter, Retry-After, takeover, refusal. Time that is tested runs on a SimulatedClock. */
import { describe, expect, it } from 'vitest';
import { BACKOFF } from '../../protocol/backoff.js';
import { STABLE_STREAM_MS } from '../../adapters/plugin/subscription.js';
import { SimulatedClock } from '../support/clock.js';
import { makeJob } from './fake-backend.js';
import { answering, capturingLogger, usePlugins } from './fixture.js';

const fixture = usePlugins();

describe('the job stream', () => {
  it('after the backend drops it, reconnects and resumes with Last-Event-ID', async () => {
    const { backend } = await fixture.open({ reasoner: answering() });
    expect(backend.connects[0]!.lastEventId).toBeUndefined();
    backend.send(makeJob(Date.now()));
    const cursor = backend.send(makeJob(Date.now()));
    await backend.until(() => backend.results.length === 2, 'both results');
    backend.drop();
    await backend.until(() => backend.streams === 1 && backend.connects.length === 2, 'the second stream');
    expect(backend.connects[1]!.lastEventId).toBe(cursor);
  });

  it('decodes a character split across two chunks whole', async () => {
    const reasoner = answering();
    const { backend } = await fixture.open({ reasoner });
    const job = makeJob(Date.now(), { payload: { session_id: 's', transcript: [{ speaker: 'a', text: 'caf\u00e9 \u2713' }] } });
    await backend.sendSplit(job, '\u2713');
    await backend.until(() => reasoner.calls.length === 1, 'the run');
    expect(reasoner.calls[0]!.payload).toEqual(job.payload);
  });

  it('waits a full-jitter backoff between failed connects: random × 250 ms doubling, up to 30 s', async () => {
    const clock = new SimulatedClock(Date.now());
    const plugin = await fixture.start({ reasoner: answering(), clock, random: () => 0.75 });
    const backend = fixture.backend();
    backend.streamAnswers.push({ status: 503 }, { status: 500 }, { status: 502 });
    await backend.until(() => backend.connects.length === 1 && plugin.status().nextStreamTryInMs !== undefined, 'the first failure');
    const waits: number[] = [];
    for (let n = 1; n <= 3; n++) {
      const wait = plugin.status().nextStreamTryInMs!;
      waits.push(wait);
      clock.increment(wait - 1);
      expect(backend.connects).toHaveLength(n);
      clock.increment(1);
      await backend.until(
        () => backend.connects.length === n + 1 && (n === 3 || plugin.status().nextStreamTryInMs !== undefined),
        `connect ${n + 1}`,
      );
    }
    expect(waits).toEqual([187, 375, 750]);
    await backend.until(() => backend.streams === 1, 'the stream, open at last');
  });

  it('draws each wait at random below the ceiling (full jitter), and the ceiling stops at 30 s', async () => {
    const clock = new SimulatedClock(Date.now());
    const draws = [0.1, 0.9, 0.999];
    const plugin = await fixture.start({ reasoner: answering(), clock, random: () => draws.shift() ?? 0.999 });
    const backend = fixture.backend();
    for (let n = 0; n < 12; n++) backend.streamAnswers.push({ status: 503 });
    const waits: number[] = [];
    for (let n = 1; n <= 12; n++) {
      await backend.until(() => backend.connects.length === n && plugin.status().nextStreamTryInMs !== undefined, `failure ${n}`);
      waits.push(plugin.status().nextStreamTryInMs!);
      clock.increment(plugin.status().nextStreamTryInMs!);
    }
    expect(waits.slice(0, 3)).toEqual([25, 450, 999]);
    expect(waits.slice(-2)).toEqual([Math.floor(0.999 * BACKOFF.capMs), Math.floor(0.999 * BACKOFF.capMs)]);
  });

  it('honours Retry-After on a 429 or 503', async () => {
    const clock = new SimulatedClock(Date.now());
    const plugin = await fixture.start({ reasoner: answering(), clock, random: () => 0.5 });
    const backend = fixture.backend();
    backend.streamAnswers.push({ status: 503, retryAfter: 9 }, { status: 429, retryAfter: 4 });
    await backend.until(() => backend.connects.length === 1 && plugin.status().nextStreamTryInMs !== undefined, 'the 503');
    expect(plugin.status().nextStreamTryInMs).toBe(9_000);
    clock.increment(9_000);
    await backend.until(() => backend.connects.length === 2 && plugin.status().nextStreamTryInMs !== undefined, 'the 429');
    expect(plugin.status().nextStreamTryInMs).toBe(4_000);
  });

  it('starts the backoff afresh after a stream that stayed up', async () => {
    const clock = new SimulatedClock(Date.now());
    const plugin = await fixture.start({ reasoner: answering(), clock, random: () => 0.999 });
    const backend = fixture.backend();
    backend.streamAnswers.push({ status: 503 }, { status: 503 }, { status: 503 });
    for (let n = 1; n <= 3; n++) {
      await backend.until(() => backend.connects.length === n && plugin.status().nextStreamTryInMs !== undefined, `failure ${n}`);
      clock.increment(plugin.status().nextStreamTryInMs!);
    }
    await backend.until(() => plugin.status().stream === 'open', 'the stream');
    // A drop right after opening counts as one more failure: the ceiling goes on doubling.
    backend.drop();
    await backend.until(() => plugin.status().nextStreamTryInMs !== undefined, 'the wait after a short stream');
    expect(plugin.status().nextStreamTryInMs).toBe(Math.floor(0.999 * 2_000));
    clock.increment(plugin.status().nextStreamTryInMs!);
    await backend.until(() => plugin.status().stream === 'open', 'the stream again');
    clock.increment(STABLE_STREAM_MS);
    backend.drop();
    await backend.until(() => plugin.status().nextStreamTryInMs !== undefined, 'the wait after a stream that stayed up');
    expect(plugin.status().nextStreamTryInMs).toBe(Math.floor(0.999 * 250));
  });

  it('a wrong token: the stream and heartbeats are refused 401, logged at error without the token, and tried again with backoff', async () => {
    const { logger, lines } = capturingLogger();
    const clock = new SimulatedClock(Date.now());
    const plugin = await fixture.start({ reasoner: answering(), clock, logger, relayToken: 'wrong-token-value' });
    const backend = fixture.backend();
    await backend.until(() => plugin.status().nextStreamTryInMs !== undefined, 'the wait after a 401');
    expect(lines.filter((line) => line.level === 50).map((line) => line.status)).toEqual([401, 401]);
    expect(JSON.stringify(lines)).not.toContain('wrong-token-value');
  });

  it('superseded: no reconnect at once; the next try waits the whole ceiling', async () => {
    const clock = new SimulatedClock(Date.now());
    const { plugin, backend } = await fixture.open({ reasoner: answering(), clock, random: () => 0 });
    backend.supersede();
    await backend.until(() => plugin.status().stream === 'waiting', 'the wait');
    expect(plugin.status().nextStreamTryInMs).toBe(BACKOFF.capMs);
    clock.increment(BACKOFF.capMs - 1);
    expect(backend.connects).toHaveLength(1);
    clock.increment(1);
    await backend.until(() => backend.connects.length === 2, 'the next try');
  });

  it('a refused heartbeat stops the plugin taking jobs, heartbeats go on, and an accepted one resumes the stream', async () => {
    const clock = new SimulatedClock(Date.now());
    const backend = fixture.backend();
    backend.heartbeatAnswer = {
      ok: true,
      interval_s: 15,
      probe_requested: false,
      refused: { code: 'unsupported_version', message: 'schema versions 1-1 are not allowed' },
    };
    const { logger, lines } = capturingLogger();
    const plugin = await fixture.start({ reasoner: answering(), clock, logger });
    expect(plugin.status()).toMatchObject({ stream: 'paused', refused: { code: 'unsupported_version' } });
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 50, refused: { code: 'unsupported_version', message: 'schema versions 1-1 are not allowed' } }),
    );
    expect(backend.connects).toHaveLength(0);
    clock.increment(15_000);
    await backend.until(() => plugin.status().heartbeats === 2, 'the next heartbeat, at the interval the answer set');
    expect(backend.heartbeats[1]).toMatchObject({ status: 'degraded' });
    expect(backend.connects).toHaveLength(0);
    backend.heartbeatAnswer = { ok: true, interval_s: 15, probe_requested: false };
    clock.increment(15_000);
    await backend.until(() => backend.streams === 1 && plugin.status().heartbeats === 3, 'the stream, once accepted');
    // Refused again while the stream is open: the stream is closed.
    backend.heartbeatAnswer = {
      ok: true,
      interval_s: 15,
      probe_requested: false,
      refused: { code: 'provider_coming_soon', message: 'not yet' },
    };
    clock.increment(15_000);
    await backend.until(() => backend.streams === 0 && plugin.status().stream === 'paused', 'the stream closed');
  });
});
