/** `GET /v1/events` framing (4.2 rules 2-6, 6.2): comments, terminal frames with ids, progress without. */
import { afterEach, describe, expect, it } from 'vitest';
import { Relay, idOf, stopAll } from './fixture.js';

afterEach(stopAll);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('GET /v1/events', () => {
  it('starts with `: open` and sends `: keep-alive` while idle', async () => {
    const relay = await Relay.start({ keepaliveMs: 50 });
    const stream = await relay.open('idle');
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers['cache-control']).toBe('no-cache, no-transform');
    await stream.until((c) => c.comments.length >= 4, 10_000, 'three keep-alives');
    expect(stream.messages.slice(0, 4)).toEqual([
      { kind: 'comment', comment: 'open' },
      { kind: 'comment', comment: 'keep-alive' },
      { kind: 'comment', comment: 'keep-alive' },
      { kind: 'comment', comment: 'keep-alive' },
    ]);
    expect(stream.frames).toEqual([]);
  });

  it('sends no keep-alive while frames keep the stream busy', async () => {
    // Progress every 40 ms against a 400 ms keep-alive: only an event-loop stall of over 350 ms could
    // make a keep-alive due, whereas a keep-alive on a fixed timer would send two in this burst.
    const relay = await Relay.start({ keepaliveMs: 400 });
    const stream = await relay.subscribe('busy');
    const steps = Array.from({ length: 20 }, (_, i) => [{ typing: `step ${i + 1}` }, { sleep: 40 }]).flat();
    await relay.turn('busy', 't1', ...steps, { message: 'done' });
    await stream.untilReplies(1);
    const first = stream.messages.findIndex((m) => m.kind === 'frame');
    const during = stream.messages.slice(first);
    expect(during.filter((m) => m.kind === 'comment')).toEqual([]);
    const texts = during.map((m) => {
      const body = JSON.parse(m.frame!.data);
      return body.label ?? body.reply_text;
    });
    expect(texts).toEqual([
      ...Array.from({ length: 20 }, (_, i) => `step ${i + 1}`),
      'done',
    ]);
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
