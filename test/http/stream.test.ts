/** `GET /v1/events` framing (4.2 rules 2-6, 6.2): comments, terminal frames with ids, progress without. */
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../support/clock.js';
import { Relay, aMoment, idOf, stopAll } from './fixture.js';

afterEach(stopAll);

/** The spec's "about every 20 seconds" (6.2), the default. */
const KEEPALIVE_MS = 20_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('GET /v1/events', () => {
  it('starts with `: open` and sends `: keep-alive` 20 s after the last write, and only then', async () => {
    const clock = new SimulatedClock();
    const relay = await Relay.start({ clock });
    const stream = await relay.subscribe('idle');
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers['cache-control']).toBe('no-cache, no-transform');
    for (let n = 1; n <= 3; n++) {
      clock.increment(KEEPALIVE_MS - 1);
      await aMoment();
      expect(stream.comments).toHaveLength(n);
      clock.increment(1);
      await stream.until((c) => c.comments.length === n + 1, 10_000, `keep-alive ${n}`);
    }
    expect(stream.messages).toEqual([
      { kind: 'comment', comment: 'open' },
      { kind: 'comment', comment: 'keep-alive' },
      { kind: 'comment', comment: 'keep-alive' },
      { kind: 'comment', comment: 'keep-alive' },
    ]);
  });

  it('sends no keep-alive while frames keep the stream busy: the interval runs from the last write', async () => {
    const clock = new SimulatedClock();
    const relay = await Relay.start({ clock });
    const stream = await relay.subscribe('busy');
    // Progress alone (its task stays pending) one millisecond short of each keep-alive: a keep-alive on a
    // fixed timer would be due at every other step.
    for (let i = 1; i <= 4; i++) {
      clock.increment(KEEPALIVE_MS - 1);
      await relay.turn('busy', `t${i}`, { typing: `step ${i}` }, { sleep: 60_000 });
      await stream.until((c) => c.frames.length === i, 10_000, `step ${i}`);
    }
    clock.increment(KEEPALIVE_MS - 1);
    await relay.turn('busy', 'last', { message: 'done' });
    await stream.untilReplies(1);
    clock.increment(KEEPALIVE_MS - 1);
    await aMoment();
    expect(stream.comments).toEqual(['open']);
    clock.increment(1);
    await stream.until((c) => c.comments.length === 2, 10_000, 'the keep-alive');
    const seen = stream.messages.map((m) => {
      if (m.kind === 'comment') return m.comment;
      const body = JSON.parse(m.frame!.data);
      return body.label ?? body.reply_text;
    });
    expect(seen).toEqual(['open', 'step 1', 'step 2', 'step 3', 'step 4', 'done', 'keep-alive']);
  });

  it('frames each terminal reply with the next id and compact JSON echoing session_id and task_id exactly', async () => {
    const relay = await Relay.start();
    // Any character but a control character is allowed in a session_id; it must come back byte for byte.
    const session = 'call 42/ü?&=%20"quoted":insights:';
    const stream = await relay.subscribe(session);
    const tasks: Array<[string, unknown[]]> = [
      ['task.1_a:b-c', [{ typing: 'thinking' }, { tool_call: 'search' }, { message: 'line one\nline two' }]],
      ['T-2', [{ completed: true }]],
      ['t:3', [{ errored: { code: 'tool_failed', message: 'the tool broke' } }]],
      ['t_4', [{ silent: true }]],
    ];
    for (const [taskId, steps] of tasks) {
      await relay.turn(session, taskId, ...steps);
      await relay.settled(taskId);
    }
    await stream.untilReplies(4);

    const base = { session_id: session };
    expect(stream.replies.map((r) => r.json)).toEqual([
      { ...base, task_id: 'task.1_a:b-c', status: 'message', message_id: expect.stringMatching(UUID), reply_text: 'line one\nline two' },
      { ...base, task_id: 'T-2', status: 'completed' },
      { ...base, task_id: 't:3', status: 'errored', error_code: 'tool_failed', error_message: 'the tool broke' },
      { ...base, task_id: 't_4', status: 'silent' },
    ]);
    expect(stream.replies.map((r) => r.id)).toEqual([1, 2, 3, 4].map((seq) => idOf(relay, session, seq)));
    expect(idOf(relay, session, 1)).toMatch(/^[0-9a-z]{1,32}:[0-9a-z]{1,32}:1$/);
    for (const frame of stream.frames) {
      expect(frame.event).toBeUndefined();
      expect(frame.data).not.toContain('\n');
      expect(frame.data).toBe(JSON.stringify(JSON.parse(frame.data)));
    }
    const progress = stream.frames.filter((f) => f.id === undefined);
    expect(progress.map((f) => JSON.parse(f.data))).toEqual([
      { ...base, task_id: 'task.1_a:b-c', status: 'typing', label: 'thinking' },
      { ...base, task_id: 'task.1_a:b-c', status: 'tool_call', label: 'search' },
    ]);
    // Progress comes before its task's terminal reply and never carries an id.
    expect(stream.frames.slice(0, 3).map((f) => f.id)).toEqual([undefined, undefined, idOf(relay, session, 1)]);
  });

  it('accepts a session_id of exactly 256 characters and echoes it', async () => {
    const relay = await Relay.start();
    const session = 's'.repeat(256);
    const stream = await relay.subscribe(session);
    await relay.turn(session, 't1', { completed: true });
    await stream.untilReplies(1);
    expect(stream.replies[0]!.json).toEqual({ session_id: session, task_id: 't1', status: 'completed' });
  });
});
