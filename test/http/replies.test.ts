/** What becomes of the agent's replies (3.1, 4.5, 6.3, 7): the size cap, one answer per task, runs that never answer. */
import { afterEach, describe, expect, it } from 'vitest';
import { LIMITS, REPLY_ERRORS } from '../../protocol/index.js';
import { readEvents } from '../support/log.js';
import { Relay, idOf, stopAll, until } from './fixture.js';

afterEach(stopAll);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The longest reply_text whose message reply is exactly at the cap (message_id is a 36-character UUID). */
function textAtCap(sessionId: string, taskId: string): number {
  const empty = { session_id: sessionId, task_id: taskId, status: 'message', message_id: 'x'.repeat(36), reply_text: '' };
  return LIMITS.replyMaxBytes - Buffer.byteLength(JSON.stringify(empty));
}

describe('replies', () => {
  it('passes a reply of exactly 256 KiB intact and replaces one a byte larger with errored/reply_too_large', async () => {
    const relay = await Relay.start();
    const stream = await relay.subscribe('s');
    const atCap = textAtCap('s', 'at-cap');
    await relay.turn('s', 'at-cap', { message_bytes: atCap });
    await relay.settled('at-cap');
    await relay.turn('s', 'over-cap', { message_bytes: textAtCap('s', 'over-cap') + 1 });
    await relay.settled('over-cap');
    await relay.turn('s', 'way-over', { message_bytes: 300_000 }, { message: 'small enough' });
    await relay.settled('way-over');
    await stream.untilReplies(3);

    const [intact, over, wayOver] = stream.replies;
    expect(Buffer.byteLength(intact!.data)).toBe(256 * 1024);
    expect(intact!.json).toEqual({
      session_id: 's',
      task_id: 'at-cap',
      status: 'message',
      message_id: expect.stringMatching(UUID),
      reply_text: 'x'.repeat(atCap),
    });
    const tooLarge = { session_id: 's', status: 'errored', error_code: 'reply_too_large', error_message: REPLY_ERRORS.reply_too_large };
    expect(over!.json).toEqual({ ...tooLarge, task_id: 'over-cap' });
    expect(wayOver!.json).toEqual({ ...tooLarge, task_id: 'way-over' });
    // The replacement takes the place (and id) of the reply it replaces, and settles the task.
    expect(stream.replies.map((r) => r.id)).toEqual([1, 2, 3].map((seq) => idOf(relay, 's', seq)));
    await until(() => relay.count('reply.dropped', 'way-over') === 1, 'the later message dropped');
    const settled = readEvents(relay.db).filter((e) => e.type === 'task.settled');
    expect(settled.map((e) => [e.task_id, e.cause])).toEqual([
      ['at-cap', 'agent'],
      ['over-cap', 'reply_too_large'],
      ['way-over', 'reply_too_large'],
    ]);
  });

  it('settles a task with its first answer: later replies are not streamed and are logged as dropped', async () => {
    const relay = await Relay.start();
    const stream = await relay.subscribe('s');
    await relay.turn('s', 't1', { message: 'first' }, { typing: 'late' }, { message: 'second' }, { completed: true });
    await until(() => relay.count('reply.dropped', 't1') === 3, 'three dropped replies');
    // A later task's reply proves the stream has moved past anything t1 could still have sent.
    await relay.turn('s', 't2', { message: 'next' });
    await stream.untilReplies(2);

    expect(stream.frames.map((f) => [f.id, JSON.parse(f.data).task_id, JSON.parse(f.data).status, JSON.parse(f.data).reply_text])).toEqual([
      [idOf(relay, 's', 1), 't1', 'message', 'first'],
      [idOf(relay, 's', 2), 't2', 'message', 'next'],
    ]);
    const dropped = readEvents(relay.db).filter((e) => e.type === 'reply.dropped');
    expect(dropped).toEqual(
      ['typing', 'message', 'completed'].map((status) => ({
        type: 'reply.dropped',
        session_id: 's',
        task_id: 't1',
        status,
        reason: 'task_settled',
        at: expect.any(Number),
      })),
    );
    expect(relay.count('task.settled', 't1')).toBe(1);
  });

  it('settles errored/agent_error when a script ends without a terminal reply', async () => {
    const relay = await Relay.start();
    const stream = await relay.subscribe('s');
    await relay.turn('s', 'progress-only', { typing: 'working' }, { tool_call: 'lookup' });
    await relay.settled('progress-only');
    await relay.turn('s', 'empty');
    await stream.untilReplies(2);

    const agentError = { session_id: 's', status: 'errored', error_code: 'agent_error', error_message: REPLY_ERRORS.agent_error };
    expect(stream.frames.map((f) => [f.id, JSON.parse(f.data)])).toEqual([
      [undefined, { session_id: 's', task_id: 'progress-only', status: 'typing', label: 'working' }],
      [undefined, { session_id: 's', task_id: 'progress-only', status: 'tool_call', label: 'lookup' }],
      [idOf(relay, 's', 1), { ...agentError, task_id: 'progress-only' }],
      [idOf(relay, 's', 2), { ...agentError, task_id: 'empty' }],
    ]);
    const causes = readEvents(relay.db)
      .filter((e) => e.type === 'task.settled')
      .map((e) => e.cause);
    expect(causes).toEqual(['agent_error', 'agent_error']);
  });

  it('answers an invalid script with errored/invalid_script and echoes plain text', async () => {
    const relay = await Relay.start();
    const stream = await relay.subscribe('s');
    await relay.post({ session_id: 's', task_id: 'bad', text: '{"script":[{"dance":true}]}' });
    await relay.settled('bad');
    await relay.post({ session_id: 's', task_id: 'plain', text: 'just words' });
    await stream.untilReplies(2);

    expect(stream.frames.map((f) => JSON.parse(f.data))).toEqual([
      { session_id: 's', task_id: 'bad', status: 'errored', error_code: 'invalid_script', error_message: expect.stringMatching(/script/) },
      { session_id: 's', task_id: 'plain', status: 'typing', label: 'thinking' },
      { session_id: 's', task_id: 'plain', status: 'message', message_id: expect.stringMatching(UUID), reply_text: 'just words' },
    ]);
  });
});
