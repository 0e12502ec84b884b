import { describe, expect, it } from 'vitest';
import {
  backoffMs,
  decideDelivery,
  evolveDelivery,
  judgeDelivery,
  initialDelivery,
  type CallbackOutcome,
  type DeliverySnapshot,
} from '../../machines/chat/delivery.js';
import type { DeliveryEvent } from '../../machines/chat/events.js';

const delivery = { n: 1, task_id: 't1' };
const callback = { url: 'http://127.0.0.1:9/cb', token: 'secret' };
const fresh = () => initialDelivery({ session_id: 's', delivery, callback, body: '{}', progress: false, at: 100 });
const answered = (status: number, extra: { retryAfterMs?: number; sessionEnded?: boolean } = {}): CallbackOutcome => ({
  kind: 'answered',
  status,
  sessionEnded: extra.sessionEnded ?? false,
  ...(extra.retryAfterMs === undefined ? {} : { retryAfterMs: extra.retryAfterMs }),
});

/** Decides and folds, as the engine does. */
function step(snapshot: DeliverySnapshot, command: Parameters<typeof decideDelivery>[0]): [DeliverySnapshot, DeliveryEvent[]] {
  const events = decideDelivery(command, snapshot);
  return [events.reduce(evolveDelivery, snapshot), events];
}

/** Runs attempts against a list of outcomes, each answered at the moment it became due. */
function run(outcomes: CallbackOutcome[]): { events: DeliveryEvent[]; last: DeliverySnapshot } {
  let snapshot = fresh();
  const events: DeliveryEvent[] = [];
  for (const outcome of outcomes) {
    const at = snapshot.context.dueAt;
    let made: DeliveryEvent[];
    [snapshot, made] = step(snapshot, { type: 'attempt', at });
    events.push(...made);
    [snapshot, made] = step(snapshot, { type: 'outcome', outcome, at: at + 10 });
    events.push(...made);
    if (snapshot.status !== 'active') break;
  }
  return { events, last: snapshot };
}

describe('judge: what an answer means (4.3 rule 5)', () => {
  it.each([
    [200, 'succeeded'],
    [202, 'succeeded'],
    [204, 'succeeded'],
    [408, 'retry'],
    [425, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [502, 'retry'],
    [503, 'retry'],
    [599, 'retry'],
    [301, 'permanent'],
    [302, 'permanent'],
    [307, 'permanent'],
    [400, 'permanent'],
    [401, 'permanent'],
    [404, 'permanent'],
    [410, 'permanent'],
  ] as const)('status %i -> %s', (status, kind) => {
    expect(judgeDelivery(answered(status) as Exclude<CallbackOutcome, { kind: 'aborted' }>).kind).toBe(kind);
  });

  it.each<[CallbackOutcome, string]>([
    [{ kind: 'timeout' }, 'retry'],
    [{ kind: 'connection_failed', code: 'ECONNREFUSED' }, 'retry'],
    [{ kind: 'refused', reason: 'private_address' }, 'permanent'],
  ])('%o -> %s', (outcome, kind) => {
    expect(judgeDelivery(outcome as Exclude<CallbackOutcome, { kind: 'aborted' }>).kind).toBe(kind);
  });
});

describe('backoff: 250 ms doubling; Retry-After honoured up to 10 s', () => {
  it.each([
    [1, undefined, 250],
    [2, undefined, 500],
    [3, undefined, 1000],
    [1, 2_000, 2_000],
    [1, 100, 250],
    [2, 60_000, 10_000],
  ])('after attempt %i with Retry-After %s: %i ms', (attempt, retryAfter, expected) => {
    expect(backoffMs(attempt, retryAfter)).toBe(expected);
  });
});

describe('decideDelivery: the delivery table', () => {
  it('503, 503, 503, 200: delivered on the 4th attempt, after 250, 500 and 1000 ms', () => {
    const { events, last } = run([answered(503), answered(503), answered(503), answered(200)]);
    expect(events.map((e) => e.type)).toEqual([
      'delivery.attempted',
      'delivery.failed',
      'delivery.attempted',
      'delivery.failed',
      'delivery.attempted',
      'delivery.failed',
      'delivery.attempted',
      'delivery.succeeded',
    ]);
    const waits = events.filter((e) => e.type === 'delivery.failed').map((e) => e.retry_at - e.at);
    expect(waits).toEqual([250, 500, 1000]);
    expect(last.value).toBe('succeeded');
  });

  it('503 four times: exactly 4 attempts, then abandoned (attempts_exhausted)', () => {
    const { events, last } = run([answered(503), answered(503), answered(503), answered(503), answered(200)]);
    expect(events.filter((e) => e.type === 'delivery.attempted')).toHaveLength(4);
    expect(events.at(-1)).toMatchObject({ type: 'delivery.abandoned', reason: 'attempts_exhausted', attempts: 4, outcome: 'status 503' });
    expect(last.value).toBe('abandoned');
  });

  it.each([404, 302])('%i: one attempt, abandoned as permanent', (status) => {
    const { events } = run([answered(status), answered(200)]);
    expect(events.map((e) => e.type)).toEqual(['delivery.attempted', 'delivery.abandoned']);
    expect(events[1]).toMatchObject({ reason: 'permanent', outcome: `status ${status}` });
  });

  it('an attempt is not made before it is due', () => {
    const [afterFail] = step(step(fresh(), { type: 'attempt', at: 100 })[0], { type: 'outcome', outcome: { kind: 'timeout' }, at: 5_100 });
    expect(afterFail.context.dueAt).toBe(5_350);
    expect(decideDelivery({ type: 'attempt', at: 5_349 }, afterFail)).toEqual([]);
    expect(decideDelivery({ type: 'attempt', at: 5_350 }, afterFail)).toMatchObject([{ type: 'delivery.attempted', attempt: 2 }]);
  });

  it('an attempt cut off by a restart is made again and not counted', () => {
    const [attempting] = step(fresh(), { type: 'attempt', at: 100 });
    const [interrupted, events] = step(attempting, { type: 'interrupt', at: 900 });
    expect(events).toEqual([{ type: 'delivery.interrupted', session_id: 's', n: 1, attempt: 1, at: 900 }]);
    expect([interrupted.value, interrupted.context.attempts, interrupted.context.dueAt]).toEqual(['waiting', 0, 900]);
    expect(decideDelivery({ type: 'attempt', at: 900 }, interrupted)).toMatchObject([{ attempt: 1 }]);
  });

  it('an aborted attempt decides nothing; a closing host leaves it to the next start', () => {
    const [attempting] = step(fresh(), { type: 'attempt', at: 100 });
    expect(decideDelivery({ type: 'outcome', outcome: { kind: 'aborted' }, at: 200 }, attempting)).toEqual([]);
  });

  it('abandon (the client ended the session) takes a waiting delivery, never one in flight or finished', () => {
    expect(decideDelivery({ type: 'abandon', at: 5 }, fresh())).toEqual([
      { type: 'delivery.abandoned', session_id: 's', n: 1, attempts: 0, reason: 'session_ended', at: 5 },
    ]);
    const [attempting] = step(fresh(), { type: 'attempt', at: 100 });
    expect(decideDelivery({ type: 'abandon', at: 150 }, attempting)).toEqual([]);
    const [done] = step(attempting, { type: 'outcome', outcome: answered(200), at: 150 });
    expect(decideDelivery({ type: 'abandon', at: 160 }, done)).toEqual([]);
  });

  it('a final delivery takes no more events', () => {
    const { last } = run([answered(404)]);
    expect(evolveDelivery(last, { type: 'delivery.attempted', session_id: 's', n: 1, attempt: 2, at: 1 })).toBe(last);
  });
});
