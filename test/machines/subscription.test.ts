import { describe, expect, it } from 'vitest';
import {
  coalesce,
  queuedBytes,
  subscription,
  type CloseCause,
  type Frame,
  type SubscriptionEvent,
  type SubscriptionSnapshot,
} from '../../machines/core/subscription.js';

const KEEPALIVE = 20_000;
const MAX_QUEUED = 100;

/** Frames of 10 bytes by default; the text names them so a flush reads as the list of what went out. */
const progress = (task_id: string, n: number, bytes = 10): Frame => ({
  kind: 'progress',
  subject: task_id,
  text: `[p ${task_id}${n}]`,
  bytes,
});
const terminal = (task_id: string, bytes = 10): Frame => ({ kind: 'terminal', subject: task_id, text: `[T ${task_id}]`, bytes });
const resync = (bytes = 10): Frame => ({ kind: 'resync', subject: '', text: '[resync]', bytes });

type Action = { type: string; params?: unknown };
const bare = (actions: readonly { type: string; params?: unknown }[]): Action[] =>
  actions.map(({ type, params }) => (params === undefined ? { type } : { type, params }));

/** Steps through events; returns the final snapshot and the actions of the last step. */
function run(events: readonly SubscriptionEvent[], from?: SubscriptionSnapshot): [SubscriptionSnapshot, Action[]] {
  let [snapshot, actions] =
    from === undefined ? subscription.initial({ keepaliveMs: KEEPALIVE, maxQueuedBytes: MAX_QUEUED, at: 0 }) : [from, []];
  for (const event of events) [snapshot, actions] = subscription.next(snapshot, event);
  return [snapshot, bare(actions)];
}

const open = (at = 1_000): SubscriptionEvent => ({ type: 'open', replay: '', at });
const full = (buffered = 0, at = 1_001): SubscriptionEvent => ({ type: 'blocked', buffered, at });
/** A committed batch of one frame; `batch` for several. */
const frame = (f: Frame, at = 1_002): SubscriptionEvent => ({ type: 'frames', frames: [f], at });
const batch = (frames: Frame[], at = 1_002): SubscriptionEvent => ({ type: 'frames', frames, at });
const drained = (at = 2_000): SubscriptionEvent => ({ type: 'drained', at });
const tick = (at: number): SubscriptionEvent => ({ type: 'tick', at });
const close = (reason: CloseCause, at = 3_000): SubscriptionEvent => ({ type: 'close', reason, at });
const disconnected = (at = 4_000): SubscriptionEvent => ({ type: 'disconnected', at });

/** Opened at 1000, the replay taken: flowing. */
const flowing = () => run([open()])[0];
/** Opened at 1000, the socket full with 40 bytes unsent: blocked. */
const blocked = (buffered = 40) => run([open(), full(buffered)])[0];
const queueOf = (s: SubscriptionSnapshot) => s.context.queue.map((f) => f.text);

describe('subscription: opening and replay', () => {
  it('starts in opening with nothing written', () => {
    const [s, actions] = subscription.initial({ keepaliveMs: KEEPALIVE, maxQueuedBytes: MAX_QUEUED, at: 7 });
    expect([s.value, actions]).toEqual(['opening', []]);
    expect(s.context).toStrictEqual({
      keepaliveMs: KEEPALIVE,
      maxQueuedBytes: MAX_QUEUED,
      queue: [],
      socketBuffered: 0,
      lastWriteAt: 7,
      closeReason: undefined,
    });
  });

  it.each([
    { replay: '', chunk: ': open\n\n' },
    {
      replay: 'id: e:g:4\ndata: {"n":4}\n\nevent: resync\ndata: {}\n\n',
      chunk: ': open\n\nid: e:g:4\ndata: {"n":4}\n\nevent: resync\ndata: {}\n\n',
    },
  ])('opening + open -> replaying -> live.flowing, one write of `: open` then the replay', ({ replay, chunk }) => {
    const [s, actions] = run([{ type: 'open', replay, at: 1_000 }]);
    expect(s.value).toEqual({ live: 'flowing' });
    expect(actions).toEqual([{ type: 'write', params: { chunk } }]);
    expect(s.context.lastWriteAt).toBe(1_000);
  });

  it('a replay that fills the socket -> blocked', () => {
    const [s, actions] = run([open(), full(64)]);
    expect([s.value, actions, s.context.socketBuffered]).toEqual([{ live: 'blocked' }, [], 64]);
  });
});

describe('subscription: live.flowing', () => {
  it.each([progress('a', 1), terminal('a'), resync()])('a $kind frame is written at once', (f) => {
    const [s, actions] = run([frame(f, 1_500)], flowing());
    expect(s.value).toEqual({ live: 'flowing' });
    expect(actions).toEqual([{ type: 'write', params: { chunk: f.text } }]);
    expect([s.context.lastWriteAt, s.context.queue]).toEqual([1_500, []]);
  });

  it('a write that fills the socket -> blocked', () => {
    const [s, actions] = run([frame(terminal('a')), full(70)], flowing());
    expect([s.value, actions, s.context.socketBuffered]).toEqual([{ live: 'blocked' }, [], 70]);
  });
});

describe('subscription: a committed batch of frames', () => {
  it('flowing: the whole batch in one write, in order', () => {
    const [s, actions] = run([batch([progress('a', 1), terminal('a'), terminal('b')], 1_500)], flowing());
    expect([s.value, actions, s.context.lastWriteAt]).toEqual([
      { live: 'flowing' },
      [{ type: 'write', params: { chunk: '[p a1][T a][T b]' } }],
      1_500,
    ]);
  });

  it('blocked: the batch is queued frame by frame, coalescing within the batch too', () => {
    const [s, actions] = run([batch([progress('a', 1), progress('b', 1), progress('a', 2), terminal('b')])], blocked(0));
    expect([s.value, actions, queueOf(s)]).toEqual([{ live: 'blocked' }, [], ['[p a2]', '[T b]']]);
  });

  it('blocked: a batch that would overflow disconnects the reader', () => {
    const [s, actions] = run([batch([terminal('a', 50), terminal('b', 50)])], blocked(1));
    expect([s.value, actions, s.context.closeReason]).toEqual([
      'closed',
      [{ type: 'destroy', params: { reason: 'slow_reader' } }],
      'slow_reader',
    ]);
  });
});

describe('subscription: keep-alive', () => {
  // Last write at 1000 (`: open`); keepalive every 20,000 ms.
  it.each([
    { at: 1_000, writes: false },
    { at: 20_999, writes: false },
    { at: 21_000, writes: true },
    { at: 60_000, writes: true },
  ])('flowing + tick at $at -> keep-alive: $writes', ({ at, writes }) => {
    const [s, actions] = run([tick(at)], flowing());
    expect(s.value).toEqual({ live: 'flowing' });
    expect(actions).toEqual(writes ? [{ type: 'write', params: { chunk: ': keep-alive\n\n' } }] : []);
    expect(s.context.lastWriteAt).toBe(writes ? at : 1_000);
  });

  it('a frame write resets the idle clock', () => {
    const [s, actions] = run([frame(progress('a', 1), 15_000), tick(21_000)], flowing());
    expect([actions, s.context.lastWriteAt]).toEqual([[], 15_000]);
    expect(run([tick(35_000)], s)[1]).toEqual([{ type: 'write', params: { chunk: ': keep-alive\n\n' } }]);
  });

  it('a keep-alive resets the idle clock too', () => {
    const [s] = run([tick(21_000)], flowing());
    expect(run([tick(40_999)], s)[1]).toEqual([]);
    expect(run([tick(41_000)], s)[1]).toEqual([{ type: 'write', params: { chunk: ': keep-alive\n\n' } }]);
  });

  it.each([
    { state: 'opening', at: () => run([])[0] },
    { state: 'live.blocked', at: () => blocked() },
    { state: 'closing', at: () => run([frame(terminal('a')), close('session_ended')], blocked())[0] },
  ])('$state + tick long idle -> nothing written', ({ at }) => {
    const before = at();
    const [s, actions] = run([tick(1_000_000)], before);
    expect([s.value, actions]).toEqual([before.value, []]);
  });
});

describe('subscription: live.blocked queues, coalescing progress by task_id', () => {
  const a1 = progress('a', 1);
  const a2 = progress('a', 2);
  const b1 = progress('b', 1);
  const c1 = progress('c', 1);
  const c2 = progress('c', 2);

  it.each<{ name: string; frames: Frame[]; queue: string[] }>([
    { name: 'one progress', frames: [a1], queue: ['[p a1]'] },
    { name: 'newer progress replaces the queued one', frames: [a1, a2], queue: ['[p a2]'] },
    { name: 'in place', frames: [a1, b1, a2], queue: ['[p a2]', '[p b1]'] },
    { name: 'terminal drops its task\u2019s queued progress', frames: [a1, terminal('a')], queue: ['[T a]'] },
    { name: 'only its own task\u2019s', frames: [a1, b1, terminal('a')], queue: ['[p b1]', '[T a]'] },
    { name: 'terminals are never displaced', frames: [terminal('a'), terminal('b'), c1, c2], queue: ['[T a]', '[T b]', '[p c2]'] },
    { name: 'progress does not replace a terminal of its task', frames: [terminal('a'), b1, terminal('b')], queue: ['[T a]', '[T b]'] },
    { name: 'resync frames are kept in order', frames: [resync(), a1, terminal('b'), a2], queue: ['[resync]', '[p a2]', '[T b]'] },
  ])('$name', ({ frames, queue }) => {
    const [s, actions] = run(
      frames.map((f) => frame(f)),
      blocked(0),
    );
    expect(s.value).toEqual({ live: 'blocked' });
    expect(actions).toEqual([]);
    expect(queueOf(s)).toEqual(queue);
    expect(queuedBytes(s.context.queue)).toBe(queue.length * 10);
  });

  it('coalesce is pure', () => {
    const queue: readonly Frame[] = [a1, b1];
    expect(coalesce(queue, a2).map((f) => f.text)).toEqual(['[p a2]', '[p b1]']);
    expect(coalesce(queue, terminal('b')).map((f) => f.text)).toEqual(['[p a1]', '[T b]']);
    expect(queue.map((f) => f.text)).toEqual(['[p a1]', '[p b1]']);
  });
});

describe('subscription: slow reader overflow', () => {
  // maxQueuedBytes 100; the socket reported 40 unsent; frames are 10 bytes.
  it.each([
    { frames: 6, value: { live: 'blocked' }, actions: [] },
    { frames: 7, value: 'closed', actions: [{ type: 'destroy', params: { reason: 'slow_reader' } }] },
  ])('40 buffered + $frames queued frames of 10 -> $value', ({ frames, value, actions: expected }) => {
    const [s, actions] = run(
      Array.from({ length: frames }, (_, i) => frame(terminal(`t${i}`))),
      blocked(40),
    );
    expect([s.value, actions]).toEqual([value, expected]);
  });

  it('overflow closes with slow_reader and drops the queue', () => {
    const [s] = run([frame(terminal('a', 60)), frame(terminal('b', 1))], blocked(40));
    expect(s.value).toBe('closed');
    expect(s.status).toBe('done');
    expect([s.context.closeReason, s.context.queue, queuedBytes(s.context.queue)]).toEqual(['slow_reader', [], 0]);
  });

  it('coalesced progress is counted once', () => {
    const [s, actions] = run([frame(progress('a', 1)), frame(progress('a', 2)), frame(progress('a', 3))], blocked(90));
    expect([s.value, actions, queueOf(s), queuedBytes(s.context.queue)]).toEqual([{ live: 'blocked' }, [], ['[p a3]'], 10]);
    expect(run([frame(progress('b', 1))], s)).toEqual([
      expect.objectContaining({ value: 'closed' }),
      [{ type: 'destroy', params: { reason: 'slow_reader' } }],
    ]);
  });

  it('a terminal that drops its task\u2019s progress is measured after the drop', () => {
    const [s, actions] = run([frame(progress('a', 1, 20)), frame(terminal('a', 20))], blocked(80));
    expect([s.value, actions, queueOf(s)]).toEqual([{ live: 'blocked' }, [], ['[T a]']]);
  });
});

describe('subscription: drained', () => {
  it('blocked + drained with an empty queue -> flowing, nothing written', () => {
    const [s, actions] = run([drained()], blocked(40));
    expect([s.value, actions, s.context.socketBuffered]).toEqual([{ live: 'flowing' }, [], 0]);
  });

  it('blocked + drained with a queue -> flowing, one write of the whole queue', () => {
    const [s, actions] = run([frame(terminal('a')), frame(progress('b', 1)), frame(terminal('c')), drained(2_500)], blocked(40));
    expect(s.value).toEqual({ live: 'flowing' });
    expect(actions).toEqual([{ type: 'write', params: { chunk: '[T a][p b1][T c]' } }]);
    expect(s.context).toMatchObject({ queue: [], socketBuffered: 0, lastWriteAt: 2_500 });
  });

  it('a flush that fills the socket again -> blocked', () => {
    const [s, actions] = run([frame(terminal('a')), drained(), full(25)], blocked(40));
    expect([s.value, actions, s.context.socketBuffered]).toEqual([{ live: 'blocked' }, [], 25]);
  });
});

describe('subscription: close', () => {
  it.each([
    { state: 'live.flowing', reason: 'session_ended' as const, from: () => flowing() },
    { state: 'live.flowing', reason: 'host_closing' as const, from: () => flowing() },
    { state: 'live.flowing', reason: 'revoked' as const, from: () => flowing() },
    { state: 'live.blocked', reason: 'session_ended' as const, from: () => blocked() },
  ])('$state + close($reason) with nothing queued -> end, closed', ({ reason, from }) => {
    const [s, actions] = run([close(reason)], from());
    expect([s.value, s.status, actions, s.context.closeReason]).toEqual(['closed', 'done', [{ type: 'end' }], reason]);
  });

  it('blocked + close with a queue -> closing; frames still queue; drained -> write the queue, then end', () => {
    let [s, actions] = run([frame(progress('a', 1)), frame(terminal('b')), close('session_ended')], blocked());
    expect([s.value, actions, s.context.closeReason]).toEqual(['closing', [], 'session_ended']);
    [s, actions] = run([frame(progress('a', 2)), frame(terminal('a'))], s);
    expect([s.value, actions, queueOf(s)]).toEqual(['closing', [], ['[T b]', '[T a]']]);
    [s, actions] = run([drained()], s);
    expect(s.value).toBe('closed');
    expect(actions).toEqual([{ type: 'write', params: { chunk: '[T b][T a]' } }, { type: 'end' }]);
    expect([s.context.queue, queuedBytes(s.context.queue), s.context.closeReason]).toEqual([[], 0, 'session_ended']);
  });

  // A stalled reader must not hold a closing host open: it is destroyed and resumes from its cursor later.
  it.each([
    { state: 'live.blocked, nothing queued', from: () => blocked() },
    { state: 'live.blocked, with a queue', from: () => run([frame(terminal('a'))], blocked())[0] },
    { state: 'closing', from: () => run([frame(terminal('a')), close('session_ended')], blocked())[0] },
  ])('$state + close(host_closing) -> destroy, closed, queue dropped', ({ from }) => {
    const [s, actions] = run([close('host_closing')], from());
    expect([s.value, s.status, actions]).toEqual(['closed', 'done', [{ type: 'destroy', params: { reason: 'host_closing' } }]]);
    expect([s.context.queue, queuedBytes(s.context.queue), s.context.closeReason]).toEqual([[], 0, 'host_closing']);
  });
});

describe('subscription: disconnected', () => {
  it.each([
    { state: 'opening', from: () => run([])[0] },
    { state: 'live.flowing', from: () => flowing() },
    { state: 'live.blocked (queue)', from: () => run([frame(terminal('a')), frame(progress('b', 1))], blocked())[0] },
    { state: 'closing', from: () => run([frame(terminal('a')), close('session_ended')], blocked())[0] },
  ])('$state + disconnected -> closed (client_gone), nothing written, queue dropped', ({ from }) => {
    const [s, actions] = run([disconnected()], from());
    expect([s.value, s.status, actions]).toEqual(['closed', 'done', []]);
    expect([s.context.closeReason, s.context.queue, queuedBytes(s.context.queue)]).toEqual(['client_gone', [], 0]);
  });

  it.each<{ name: string; event: SubscriptionEvent }>([
    { name: 'frame', event: frame(terminal('z'), 5_000) },
    { name: 'blocked', event: full(99, 5_000) },
    { name: 'drained', event: drained(5_000) },
    { name: 'tick', event: tick(1_000_000) },
    { name: 'close', event: close('host_closing', 5_000) },
  ])('closed (slow_reader) ignores $name', ({ event }) => {
    const before = run([frame(terminal('a', 61))], blocked(40))[0];
    const [s, actions] = run([event], before);
    expect([s.value, actions]).toEqual(['closed', []]);
    expect(s.context).toStrictEqual(before.context);
  });
});
