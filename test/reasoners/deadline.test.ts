import { describe, expect, it } from 'vitest';
import { jobEnd } from '../../adapters/reasoners/deadline.js';
import type { Clock } from '../../engine/core/clock.js';
import { CALL, job } from './job.js';

describe("a job's end", () => {
  it('is the deadline when its own timer fired, even if the wall clock still reads a hair before it', async () => {
    const request = job('live_analysis', CALL, { deadlineMs: 60_000 });
    // A timer that fires while now() still reads before the deadline: timers and the wall clock are different clocks.
    const clock: Clock = {
      now: () => request.deadline_at - 1,
      setTimeout: (fn) => setTimeout(fn, 1),
      clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
    };
    const end = jobEnd(request, clock);
    await new Promise((resolve) => end.signal.addEventListener('abort', resolve));
    expect(end.failure().code).toBe('deadline_exceeded');
    end.dispose();
  });

  it('is the plugin stopping when its signal aborts before the deadline', () => {
    const stop = new AbortController();
    const end = jobEnd(job('live_analysis', CALL, { signal: stop.signal }));
    expect(end.signal.aborted).toBe(false);
    stop.abort();
    expect([end.signal.aborted, end.failure().code]).toEqual([true, 'interrupted']);
    end.dispose();
  });
});
