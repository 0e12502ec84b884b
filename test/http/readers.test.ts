/**
 * Readers of `/v1/events` (4.2 rules 4 and 8): slow readers get coalesced progress and every terminal
 * reply, or are cut off past 1 MiB queued and resume losing nothing; the per-session reader cap.
 */
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SseConnection } from '../support/sse.js';
import { TOKEN, startHost } from '../support/host.js';
import { Relay, expectError, idOf, sleep, stopAll, until } from './fixture.js';

afterEach(stopAll);

const FILL_BYTES = 200_000;

/**
 * Posts 200 KB replies to a paused reader until the server's socket holds unsent bytes that stay unsent:
 * then the kernel buffers on both ends are full and the server must queue. Returns the fills posted.
 * How many that takes depends on the machine's TCP buffers, so it is measured, not assumed.
 */
async function fillUntilBlocked(relay: Relay, sessionId: string, socket: Socket): Promise<number> {
  for (let i = 1; i <= 500; i++) {
    await relay.turn(sessionId, `fill-${i}`, { message_bytes: FILL_BYTES });
    await relay.settled(`fill-${i}`);
    const unsent = socket.writableLength;
    if (unsent === 0) continue;
    // On loopback the kernel takes what it can within microseconds; unsent bytes that do not move are stuck.
    await sleep(50);
    if (socket.writableLength === unsent) return i;
  }
  throw new Error('the server socket never filled up');
}

const fills = (n: number) => Array.from({ length: n }, (_, i) => `fill-${i + 1}`);

describe('slow readers', () => {
  it('get every terminal reply in order and at most one queued progress frame per task', async () => {
    const relay = await Relay.start();
    const socket = relay.nextEventsSocket();
    const stream = await relay.subscribe('s');
    stream.pause();
    const filled = await fillUntilBlocked(relay, 's', await socket);

    // While the reader is blocked: p1 sends progress then settles, p2 sends progress and stays pending.
    await relay.turn('s', 'p1', { typing: 'a1' }, { typing: 'a2' }, { tool_call: 'a3' }, { typing: 'a4' }, { message: 'p1 done' });
    await relay.settled('p1');
    await relay.turn('s', 'p2', { typing: 'b1' }, { tool_call: 'b2' }, { typing: 'b3' }, { sleep: 60_000 });
    await until(() => relay.count('task.progressed', 'p2') === 3, 'p2 progress');
    await relay.turn('s', 'p3', { message: 'p3 done' });
    await relay.settled('p3');

    stream.resume();
    await stream.untilReplies(filled + 2);
    const rows = (frames: SseConnection['frames']) =>
      frames.map((f) => {
        const body = JSON.parse(f.data);
        return [f.id, body.task_id, body.status, body.label ?? body.reply_text?.slice(0, 10)];
      });
    expect(rows(stream.frames)).toEqual([
      ...fills(filled).map((task, i) => [idOf(relay, 's', i + 1), task, 'message', 'xxxxxxxxxx']),
      // p1's progress went stale when it settled; p2's three frames coalesced into its latest.
      [idOf(relay, 's', filled + 1), 'p1', 'message', 'p1 done'],
      [undefined, 'p2', 'typing', 'b3'],
      [idOf(relay, 's', filled + 2), 'p3', 'message', 'p3 done'],
    ]);
    expect(stream.replies.slice(0, filled).every((r) => r.json.reply_text === 'x'.repeat(FILL_BYTES))).toBe(true);

    // Drained, the reader is live again: progress flows uncoalesced.
    const seen = stream.frames.length;
    await relay.turn('s', 'p4', { typing: 'c1' }, { typing: 'c2' }, { message: 'p4 done' });
    await stream.untilReplies(filled + 3);
    expect(rows(stream.frames.slice(seen))).toEqual([
      [undefined, 'p4', 'typing', 'c1'],
      [undefined, 'p4', 'typing', 'c2'],
      [idOf(relay, 's', filled + 3), 'p4', 'message', 'p4 done'],
    ]);
  });

  it('are disconnected past 1 MiB of queued replies and resume from their cursor with no gap and no duplicate', async () => {
    // Retention large enough that nothing is evicted: the resume must then bring back everything.
    const relay = await Relay.start({ limits: { maxReplies: 10_000, maxBytes: 1024 * 1024 * 1024 } });
    const socket = relay.nextEventsSocket();
    const slow = await relay.subscribe('s');
    slow.pause();
    let posted = await fillUntilBlocked(relay, 's', await socket);

    // What the socket already holds is at most one 200 KB frame: four more queued stay under 1 MiB...
    for (let i = 0; i < 4; i++) {
      posted += 1;
      await relay.turn('s', `fill-${posted}`, { message_bytes: FILL_BYTES });
      await relay.settled(`fill-${posted}`);
    }
    expect(relay.readers('s')).toBe(1);
    // ...and six are over it whatever the socket holds.
    for (let i = 0; i < 2 && relay.readers('s') === 1; i++) {
      posted += 1;
      await relay.turn('s', `fill-${posted}`, { message_bytes: FILL_BYTES });
      await relay.settled(`fill-${posted}`);
    }
    expect(relay.readers('s')).toBe(0);

    // Replies keep coming after the reader is gone.
    for (const task of ['after-1', 'after-2']) {
      await relay.turn('s', task, { message: task });
      await relay.settled(task);
    }
    const tasks = [...fills(posted), 'after-1', 'after-2'];

    slow.resume();
    await slow.untilEnded();
    const cursor = slow.lastId!;
    expect(slow.replies.length).toBeGreaterThanOrEqual(1);
    expect(slow.replies.length).toBeLessThan(posted);

    const resumed = await relay.open('s', { lastEventId: cursor });
    await resumed.until((c) => c.frames.some((f) => f.event === 'resync'), 10_000, 'the resync frame');
    const all = [...slow.replies, ...resumed.replies];
    expect(all.map((r) => r.id)).toEqual(tasks.map((_, i) => idOf(relay, 's', i + 1)));
    expect(all.map((r) => r.json.task_id)).toEqual(tasks);
    const settled = relay.events.filter((e) => e.type === 'task.settled');
    expect(all.map((r) => r.data)).toEqual(settled.map((e) => e.data));
    expect(JSON.parse(resumed.frames.at(-1)!.data)).toEqual({
      type: 'resync',
      session_id: 's',
      missed_task_ids: [],
      recovery_complete: true,
    });
  });
});

describe('the reader cap', () => {
  it('refuses a reader over the cap with 429 and Retry-After, and counts live readers only', async () => {
    const relay = await Relay.start({ maxReadersPerSession: 2 });
    await relay.turn('s', 't0', { completed: true });
    const first = await relay.subscribe('s');
    await relay.subscribe('s');

    const third = await relay.refused('s');
    expectError(third, 'too_many_readers');
    expect(third.headers['retry-after']).toBe('1');
    expect(relay.readers('s')).toBe(2);
    // The cap is per session.
    await relay.subscribe('another');

    first.close();
    await until(() => relay.readers('s') === 1, 'the closed reader dropped');
    const fourth = await relay.subscribe('s');
    expect(relay.readers('s')).toBe(2);
    await relay.turn('s', 't1', { message: 'to both' });
    await fourth.untilReplies(1);
    expect(fourth.replies[0]!.json).toMatchObject({ task_id: 't1', reply_text: 'to both' });
  });
});

describe('a closing host and a stalled reader', () => {
  it('closes without waiting for the reader to drain; the reader resumes on the next start, losing nothing', async () => {
    // Room for every fill in the backlog, so that the resume is an exact replay rather than a resync.
    const limits = { maxBytes: 64 * 1024 * 1024 };
    const relay = await Relay.start({ limits });
    const socket = relay.nextEventsSocket();
    const stream = await relay.subscribe('s');
    stream.pause();
    const filled = await fillUntilBlocked(relay, 's', await socket);
    // One more reply queues behind the full socket.
    await relay.turn('s', 'last', { message: 'the end' });
    await relay.settled('last');

    // Without a bound, close() would wait for a reader that never reads.
    await relay.t.host.close();
    expect(stream.ended || (await socket).destroyed).toBe(true);

    const again = await startHost({ dir: relay.t.dir, limits });
    try {
      const resumed = await SseConnection.open(`${again.url}/v1/events?session_id=s`, { token: TOKEN, lastEventId: idOf(relay, 's', 1) });
      await resumed.untilReplies(filled);
      expect(resumed.replies.map((r) => r.json.task_id)).toEqual([...fills(filled).slice(1), 'last']);
      resumed.close();
    } finally {
      await again.close();
    }
  });
});
