/** The plugin's heartbeats (PROTOCOL.md 6d.14): at the interval the backend says (6e.25); against a backend that refuses one for load (6e.20), sent again after the 429's Retry-After, not at the interval, and not taken for a refusal of the plugin. */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../support/clock.js';
import { answering, capturingLogger, usePlugins } from './fixture.js';

const fixture = usePlugins();
const TOO_SOON = { status: 429, body: { error: { code: 'too_many_status_changes', message: 'too soon' } } };

describe('heartbeats answered 429', () => {
  it('go out again once the Retry-After has passed, then on the interval; the stream opens meanwhile', async () => {
    const clock = new SimulatedClock(Date.now());
    const backend = fixture.backend();
    backend.heartbeatAnswers.push({ ...TOO_SOON, retryAfter: 7 });
    const { logger, lines } = capturingLogger();
    const plugin = await fixture.start({ reasoner: answering(), clock, logger });
    await backend.until(() => plugin.status().heartbeats === 1 && backend.streams === 1, 'the first heartbeat done, and the stream');
    expect(plugin.status().refused).toBeUndefined();
    expect(lines).toContainEqual(expect.objectContaining({ level: 30, status: 429, retry_after_ms: 7_000 }));
    clock.increment(6_999);
    expect(backend.heartbeats).toHaveLength(1);
    clock.increment(1);
    await backend.until(() => plugin.status().heartbeats === 2, 'the heartbeat sent again');
    clock.increment(29_999);
    expect(backend.heartbeats).toHaveLength(2);
    clock.increment(1);
    await backend.until(() => plugin.status().heartbeats === 3, 'the next, at the interval');
  });

  it('a Retry-After of 0 waits a second: no tight loop', async () => {
    const clock = new SimulatedClock(Date.now());
    const backend = fixture.backend();
    backend.heartbeatAnswers.push({ ...TOO_SOON, retryAfter: 0 });
    const plugin = await fixture.start({ reasoner: answering(), clock });
    await backend.until(() => plugin.status().heartbeats === 1, 'the first heartbeat done');
    clock.increment(999);
    expect(backend.heartbeats).toHaveLength(1);
    clock.increment(1);
    await backend.until(() => plugin.status().heartbeats === 2, 'the heartbeat sent again');
  });
});

describe("the backend's interval (PROTOCOL.md 6e.25)", () => {
  it("is followed from the next heartbeat on: the operator's setting reaches the plugin without configuring it", async () => {
    const clock = new SimulatedClock(Date.now());
    const backend = fixture.backend();
    backend.heartbeatAnswer = { ok: true, interval_s: 2, probe_requested: false };
    const plugin = await fixture.start({ reasoner: answering(), clock });
    await backend.until(() => plugin.status().heartbeats === 1, 'the first heartbeat done');
    clock.increment(1_999);
    expect(backend.heartbeats).toHaveLength(1);
    clock.increment(1);
    await backend.until(() => plugin.status().heartbeats === 2, 'the next, two seconds later');
    // The backend's operator changes it: the plugin follows at its next answer.
    backend.heartbeatAnswer = { ok: true, interval_s: 5, probe_requested: false };
    clock.increment(2_000);
    await backend.until(() => plugin.status().heartbeats === 3, 'one more at the old interval');
    clock.increment(4_999);
    expect(backend.heartbeats).toHaveLength(3);
    clock.increment(1);
    await backend.until(() => plugin.status().heartbeats === 4, 'the next at the new interval');
  });

  it('is at most 10 minutes, whatever the backend says: a heartbeat still goes out', async () => {
    const clock = new SimulatedClock(Date.now());
    const backend = fixture.backend();
    backend.heartbeatAnswer = { ok: true, interval_s: 86_400 * 30, probe_requested: false };
    const plugin = await fixture.start({ reasoner: answering(), clock });
    await backend.until(() => plugin.status().heartbeats === 1, 'the first heartbeat done');
    clock.increment(599_999);
    expect(backend.heartbeats).toHaveLength(1);
    clock.increment(1);
    await backend.until(() => plugin.status().heartbeats === 2, 'the next, ten minutes later');
  });
});

describe('the last heartbeat', () => {
  it('says the plugin stopped, once its jobs are done with, and names no running job', async () => {
    const backend = fixture.backend();
    const plugin = await fixture.start({ reasoner: answering() });
    await backend.until(() => plugin.status().heartbeats === 1, 'the first heartbeat done');
    await plugin.stop();
    expect(backend.heartbeats.map((beat) => [beat.status, beat.running_job_ids])).toEqual([
      ['ready', []],
      ['stopped', []],
    ]);
  });
});
