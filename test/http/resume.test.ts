/** Resume (4.2 rule 7, 2.6, 2.7, 8): replay after Last-Event-ID, the resync frame, retention and the evicted-task ledger. */
import { afterEach, describe, expect, it } from 'vitest';
import { LIMITS } from '../../protocol/index.js';
import { SimulatedClock } from '../support/clock.js';
import type { SseConnection, SseFrame } from '../support/sse.js';
import { Relay, idOf, stopAll } from './fixture.js';

afterEach(stopAll);

type Reply = SseConnection['replies'][number];

/** Runs `n` turns on a session (task ids t1..tn) and returns their replies as a live reader saw them, in seq order. */
async function turns(relay: Relay, sessionId: string, n: number, step: unknown = { completed: true }): Promise<Reply[]> {
  const stream = await relay.subscribe(sessionId);
  const accepted = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      relay.post({ session_id: sessionId, task_id: `t${i + 1}`, text: JSON.stringify({ script: [step] }) }),
    ),
  );
  expect(accepted.map((a) => a.status)).toEqual(Array(n).fill(202));
  await stream.untilReplies(n);
  stream.close();
  const replies = stream.replies;
  expect(replies.map((r) => r.id)).toEqual(Array.from({ length: n }, (_, i) => idOf(relay, sessionId, i + 1)));
  return replies;
}

/** Reconnects with `lastEventId` and waits for the resync frame that ends the replay. */
async function resumeFrom(
  relay: Relay,
  sessionId: string,
  lastEventId: string,
): Promise<{ stream: SseConnection; replayed: SseFrame[]; resync: unknown }> {
  const stream = await relay.open(sessionId, { lastEventId });
  expect(stream.status).toBe(200);
  await stream.until((c) => c.frames.some((f) => f.event === 'resync'), 10_000, 'the resync frame');
  expect(stream.messages[0]).toEqual({ kind: 'comment', comment: 'open' });
  const frames = stream.frames;
  const resync = frames.at(-1)!;
  // The resync frame comes last, once, with no id, as compact JSON.
  expect(frames.filter((f) => f.event !== undefined)).toEqual([resync]);
  expect(resync.id).toBeUndefined();
  expect(resync.data).toBe(JSON.stringify(JSON.parse(resync.data)));
  return { stream, replayed: frames.slice(0, -1), resync: JSON.parse(resync.data) };
}

const frameOf = (r: Reply): SseFrame => ({ id: r.id!, data: r.data });
const resync = (session_id: string, missed_task_ids: string[], recovery_complete: boolean) => ({
  type: 'resync',
  session_id,
  missed_task_ids,
  recovery_complete,
});

describe('resume with Last-Event-ID', () => {
  it('replays the retained replies after the cursor, then the resync frame, then goes live', async () => {
    const relay = await Relay.start();
    const replies = await turns(relay, 's', 4, { message: 'answer' });

    const { stream, replayed, resync: frame } = await resumeFrom(relay, 's', replies[1]!.id!);
    expect(replayed).toEqual(replies.slice(2).map(frameOf));
    expect(frame).toEqual(resync('s', [], true));

    await relay.turn('s', 't5', { typing: 'live again' }, { message: 'five' });
    await stream.untilReplies(3);
    expect(stream.frames.slice(3).map((f) => [f.id, f.event, JSON.parse(f.data).status])).toEqual([
      [undefined, undefined, 'typing'],
      [idOf(relay, 's', 5), undefined, 'message'],
    ]);

    const latest = await resumeFrom(relay, 's', idOf(relay, 's', 5));
    expect(latest.replayed).toEqual([]);
    expect(latest.resync).toEqual(resync('s', [], true));
  });

  it('never sends a resync frame (or a replay) to a first connection', async () => {
    const clock = new SimulatedClock();
    const relay = await Relay.start({ clock });
    const first = await relay.subscribe('s');
    await relay.turn('s', 't1', { message: 'one' });
    await first.untilReplies(1);

    // Nothing but `: open`, then the keep-alive a whole interval later: no replay or resync came in between.
    const fresh = await relay.subscribe('s');
    clock.increment(LIMITS.keepaliveMs);
    await fresh.until((c) => c.comments.includes('keep-alive'), 10_000, 'a keep-alive');
    expect(fresh.messages).toEqual([
      { kind: 'comment', comment: 'open' },
      { kind: 'comment', comment: 'keep-alive' },
    ]);
    await relay.turn('s', 't2', { message: 'two' });
    await fresh.untilReplies(1);
    await first.untilReplies(2);
    for (const stream of [first, fresh]) expect(stream.frames.filter((f) => f.event !== undefined)).toEqual([]);
    expect(fresh.replies.map((r) => r.id)).toEqual([idOf(relay, 's', 2)]);
  });

  it('with the default retention keeps the last 64 replies and names the evicted tasks after the cursor', async () => {
    const relay = await Relay.start();
    const replies = await turns(relay, 's', 70);
    // Seqs 1-6 were evicted, 7-70 retained. From cursor 1, seqs 2-6 are known to be lost.
    const { replayed, resync: frame } = await resumeFrom(relay, 's', replies[0]!.id!);
    expect(replayed).toEqual(replies.slice(6).map(frameOf));
    expect(replayed).toHaveLength(64);
    expect(frame).toEqual(
      resync(
        's',
        replies.slice(1, 6).map((r) => r.json.task_id as string),
        true,
      ),
    );

    const fromRetained = await resumeFrom(relay, 's', replies[6]!.id!);
    expect(fromRetained.replayed).toEqual(replies.slice(7).map(frameOf));
    expect(fromRetained.resync).toEqual(resync('s', [], true));
  });

  it('with the default retention keeps no more than 1 MiB of replies', async () => {
    const relay = await Relay.start();
    // Six replies of about 250 KB: four fit in 1 MiB, five do not, so seqs 1-2 are evicted.
    const replies = await turns(relay, 's', 6, { message_bytes: 250_000 });
    const bytes = replies.map((r) => Buffer.byteLength(r.data));
    expect(bytes.slice(2).reduce((a, b) => a + b)).toBeLessThanOrEqual(1024 * 1024);
    expect(bytes.slice(1).reduce((a, b) => a + b)).toBeGreaterThan(1024 * 1024);

    const { replayed, resync: frame } = await resumeFrom(relay, 's', replies[0]!.id!);
    expect(replayed).toEqual(replies.slice(2).map(frameOf));
    expect(frame).toEqual(resync('s', [replies[1]!.json.task_id as string], true));
  });

  describe('with a small ledger (4 replies retained, 3 evicted task ids remembered)', () => {
    // Ten replies: seqs 7-10 retained; 4-6 in the ledger; 1-3 evicted and forgotten.
    const limits = { maxReplies: 4, ledgerMaxTasks: 3 };

    it('reconciles exactly from a cursor the ledger still covers', async () => {
      const relay = await Relay.start({ limits });
      const replies = await turns(relay, 's', 10);
      const tasks = (from: number, to: number) => replies.slice(from - 1, to).map((r) => r.json.task_id as string);

      for (const [cursor, missed] of [
        [3, tasks(4, 6)],
        [5, tasks(6, 6)],
        [6, []],
        [8, []],
      ] as const) {
        const { replayed, resync: frame } = await resumeFrom(relay, 's', idOf(relay, 's', cursor));
        expect(replayed).toEqual(replies.slice(Math.max(cursor, 6)).map(frameOf));
        expect(frame).toEqual(resync('s', [...missed], true));
      }
    });

    it('says recovery_complete: false for a cursor older than the ledger covers', async () => {
      const relay = await Relay.start({ limits });
      const replies = await turns(relay, 's', 10);
      for (const cursor of [1, 2]) {
        const { replayed, resync: frame } = await resumeFrom(relay, 's', idOf(relay, 's', cursor));
        expect(replayed).toEqual(replies.slice(6).map(frameOf));
        expect(frame).toEqual(
          resync(
            's',
            replies.slice(3, 6).map((r) => r.json.task_id as string),
            false,
          ),
        );
      }
    });

    it('gives a cursor this session never issued the whole backlog and recovery_complete: false', async () => {
      const relay = await Relay.start({ limits });
      const replies = await turns(relay, 's', 10);
      const [other] = await turns(relay, 'other', 1);
      const generation = relay.taskSession('s').generation;
      const wrongEpoch = relay.epoch === 'zzz' ? 'yyy' : 'zzz';
      const cursors = [
        other!.id!, // another session's real id
        'abc:def:1', // invented
        `${relay.epoch}:${generation}:11`, // this session's epoch and generation, a seq it never reached
        `${wrongEpoch}:${generation}:8`, // a seq it reached, in an epoch it was not issued in
      ];
      for (const cursor of cursors) {
        const { replayed, resync: frame } = await resumeFrom(relay, 's', cursor);
        expect(replayed).toEqual(replies.slice(6).map(frameOf));
        expect(frame).toEqual(
          resync(
            's',
            replies.slice(3, 6).map((r) => r.json.task_id as string),
            false,
          ),
        );
      }
    });
  });

  it('answers a cursor for a session it has never seen with an empty, incomplete resync', async () => {
    const relay = await Relay.start();
    const { replayed, resync: frame } = await resumeFrom(relay, 'never-seen', 'abc:def:3');
    expect(replayed).toEqual([]);
    expect(frame).toEqual(resync('never-seen', [], false));
  });
});
