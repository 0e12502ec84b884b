/**
 * Callback delivery end to end (4.3, 8): a real host on loopback posting to a real loopback receiver
 * that plays the client's callback listener. Form B conversations, and Form A tasks with a callback block.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { AssistantHostOptions, DomainEvent } from '../../index.js';
import { SimulatedClock } from '../support/clock.js';
import { Receiver, closeReceivers, type Answer } from '../support/receiver.js';
import { post, script } from '../support/http.js';
import { countEvents } from '../support/log.js';
import { Relay, TOKEN, aMoment, stopAll, until } from './fixture.js';

afterEach(async () => {
  await stopAll();
  await closeReceivers();
});

const CALLBACK_TOKEN = 'callback-secret-token';

/** Answers with each status in turn (the last one repeats). */
function statuses(...codes: number[]): Answer {
  let i = 0;
  return (_received, response) => {
    const status = codes[Math.min(i++, codes.length - 1)]!;
    response.writeHead(status, { 'content-type': 'application/json' }).end(status < 300 ? '{"ok":true}' : '{}');
  };
}

function delivered(relay: Relay, type: DomainEvent['type']): DomainEvent[] {
  return relay.events.filter((e) => e.type === type);
}

type Failed = Extract<DomainEvent, { type: 'delivery.failed' }>;

/**
 * Waits until the `attempt`th failed attempt is logged, shows that nothing is attempted one millisecond
 * before its `retry_at`, moves the clock to it and waits for the next attempt. Returns the failure.
 */
async function retryAt(relay: Relay, clock: SimulatedClock, attempt: number): Promise<Failed> {
  await until(() => relay.count('delivery.failed') === attempt, `attempt ${attempt} failed`);
  const failed = delivered(relay, 'delivery.failed')[attempt - 1] as Failed;
  const attempts = relay.count('delivery.attempted');
  clock.incrementTo(failed.retry_at - 1);
  await aMoment();
  expect(relay.count('delivery.attempted')).toBe(attempts);
  clock.increment(1);
  await until(() => relay.count('delivery.attempted') > attempts, `the attempt after attempt ${attempt}`);
  return failed;
}

async function formB(
  receiver: Receiver,
  session = 's-b',
  options: Partial<AssistantHostOptions> = {},
): Promise<{ relay: Relay; send: (text: string, taskId?: string) => Promise<string> }> {
  const relay = await Relay.start({ form: 'B', ...options });
  const send = async (text: string, taskId: string = randomUUID()) => {
    const response = await post(relay.url, TOKEN, {
      session_id: session,
      task_id: taskId,
      text,
      callback: { url: `${receiver.url}/cb`, token: CALLBACK_TOKEN },
    });
    expect(response.status).toBe(202);
    return taskId;
  };
  return { relay, send };
}

describe('Form B: the conversation over callbacks', () => {
  it('posts every message of a turn, in order, to {callback}/tasks/{task_id} with the callback token', async () => {
    const receiver = await Receiver.start();
    const { relay, send } = await formB(receiver);
    const taskId = await send(script({ typing: 'thinking' }, { message: 'one' }, { message: 'two' }));
    await until(() => receiver.requests.length === 3, 'three callback POSTs');
    for (const r of receiver.requests) {
      expect([r.method, r.url, r.headers.authorization, r.headers['content-type']]).toEqual([
        'POST',
        `/cb/tasks/${taskId}`,
        `Bearer ${CALLBACK_TOKEN}`,
        'application/json',
      ]);
    }
    const bodies = receiver.requests.map((r) => JSON.parse(r.body) as Record<string, unknown>);
    expect(bodies).toEqual([
      { session_id: 's-b', status: 'typing', label: 'thinking', user_message_id: taskId },
      { session_id: 's-b', status: 'message', message_id: expect.any(String), reply_text: 'one' },
      { session_id: 's-b', status: 'message', message_id: expect.any(String), reply_text: 'two' },
    ]);
    expect(new Set(bodies.map((b) => b.message_id)).size).toBe(3);
    await until(() => relay.t.host.deliveryStats().succeeded === 3, 'three deliveries succeeded');
    expect(relay.t.host.session('s-b')).toMatchObject({
      form: 'B',
      state: 'open',
      callback_url: `${receiver.url}/cb`,
      callbacks: { queued: 0, succeeded: 3, abandoned: 0 },
    });
  });

  it('a message the agent adds on its own goes to a fresh UUID path, after what was queued before', async () => {
    const receiver = await Receiver.start();
    const { relay, send } = await formB(receiver);
    const taskId = await send('hello');
    expect(await relay.t.host.message('s-b', 'by the way')).toBe('queued');
    await until(() => receiver.requests.length === 3, 'echo typing, echo message, own message');
    const own = receiver.requests[2]!;
    const path = /^\/cb\/tasks\/([0-9a-f-]{36})$/.exec(own.url);
    expect(path).not.toBeNull();
    expect(path![1]).not.toBe(taskId);
    expect(JSON.parse(own.body)).toMatchObject({ status: 'message', reply_text: 'by the way' });
  });

  it('refuses, appending nothing: a non-UUID task_id, a first message without callback, and the stream', async () => {
    const relay = await Relay.start({ form: 'B' });
    const before = countEvents(relay.db);
    const notUuid = await post(relay.url, TOKEN, {
      session_id: 's',
      task_id: 't1',
      text: 'x',
      callback: { url: 'http://127.0.0.1:9', token: 'k' },
    });
    expect([notUuid.status, notUuid.body]).toEqual([400, { error: { code: 'invalid_task_id', message: expect.any(String) } }]);
    const noCallback = await post(relay.url, TOKEN, { session_id: 's', task_id: randomUUID(), text: 'x' });
    expect([noCallback.status, (noCallback.body as { error: { code: string } }).error.code]).toEqual([400, 'callback_required']);
    const stream = await fetch(relay.eventsUrl('s'), { headers: { authorization: `Bearer ${TOKEN}` } });
    expect([stream.status, ((await stream.json()) as { error: { code: string } }).error.code]).toEqual([409, 'stream_not_available']);
    expect(countEvents(relay.db)).toBe(before);
  });
});

describe('delivery: retries, backoff and giving up (4.3 rule 5, Part 8)', () => {
  it('503, 503, 503, 200: the message arrives on the 4th attempt, each made exactly at its retry_at, 250, 500 and 1000 ms on', async () => {
    const clock = new SimulatedClock();
    const receiver = await Receiver.start(statuses(503, 503, 503, 200));
    const { relay, send } = await formB(receiver, 's-b', { clock });
    const sent = clock.now();
    await send(script({ message: 'persist' }));
    const failed = [await retryAt(relay, clock, 1), await retryAt(relay, clock, 2), await retryAt(relay, clock, 3)];
    await until(() => delivered(relay, 'delivery.succeeded').length === 1, 'delivered');
    expect(receiver.requests).toHaveLength(4);
    expect(new Set(receiver.requests.map((r) => r.body)).size).toBe(1);
    expect(failed.map((e) => [e.attempt, e.outcome, e.retry_at - e.at])).toEqual([
      [1, 'status 503', 250],
      [2, 'status 503', 500],
      [3, 'status 503', 1000],
    ]);
    // The log's own clock says when each attempt was made: the first at once, each later one at its retry_at.
    const attempted = delivered(relay, 'delivery.attempted') as Extract<DomainEvent, { type: 'delivery.attempted' }>[];
    expect(attempted.map((e) => e.at)).toEqual([sent, ...failed.map((e) => e.retry_at)]);
  });

  it.each([
    ['3', 3_000],
    ['60', 10_000],
  ])('a Retry-After of %s s makes the host wait %i ms before the next attempt', async (retryAfter, waitMs) => {
    const clock = new SimulatedClock();
    let answers = 0;
    const receiver = await Receiver.start((_received, response) => {
      if (answers++ === 0) response.writeHead(503, { 'retry-after': retryAfter }).end();
      else response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    const { relay, send } = await formB(receiver, 's-b', { clock });
    await send(script({ message: 'later' }));
    const failed = await retryAt(relay, clock, 1);
    expect(failed.retry_at - failed.at).toBe(waitMs);
    await until(() => delivered(relay, 'delivery.succeeded').length === 1, 'delivered');
    expect(receiver.requests).toHaveLength(2);
  });

  it('a retry wait survives a restart: the next attempt is made at the logged retry_at, not before', async () => {
    const clock = new SimulatedClock();
    const receiver = await Receiver.start(statuses(503, 200));
    const { relay: before, send } = await formB(receiver, 's-b', { clock });
    await send(script({ message: 'across' }));
    await until(() => before.count('delivery.failed') === 1, 'the first attempt failed');
    const [failed] = delivered(before, 'delivery.failed') as Failed[];
    const relay = await Relay.start({ form: 'B', clock, dir: await before.closeKeepingLog() });
    clock.incrementTo(failed!.retry_at - 1);
    await aMoment();
    expect(delivered(relay, 'delivery.attempted')).toEqual([]);
    clock.increment(1);
    await until(() => relay.t.host.deliveryStats().succeeded === 1, 'delivered after the restart');
    expect(delivered(relay, 'delivery.attempted')).toEqual([expect.objectContaining({ attempt: 2, at: failed!.retry_at })]);
    expect(receiver.requests).toHaveLength(2);
    expect(receiver.requests[1]!.body).toBe(receiver.requests[0]!.body);
  });

  it('503 four times: exactly 4 attempts, then an abandoned event and a counter', async () => {
    const clock = new SimulatedClock();
    const receiver = await Receiver.start(statuses(503));
    const { relay, send } = await formB(receiver, 's-b', { clock });
    await send(script({ message: 'doomed' }));
    for (const attempt of [1, 2, 3]) await retryAt(relay, clock, attempt);
    await until(() => delivered(relay, 'delivery.abandoned').length === 1, 'abandoned');
    expect(delivered(relay, 'delivery.abandoned')[0]).toMatchObject({ reason: 'attempts_exhausted', attempts: 4, outcome: 'status 503' });
    expect(receiver.requests).toHaveLength(4);
    expect(relay.t.host.deliveryStats()).toEqual({ queued: 0, succeeded: 0, abandoned: 1 });
  });

  it.each([404, 302])('%i: exactly one attempt (a redirect is never followed)', async (status) => {
    const elsewhere = await Receiver.start();
    const receiver = await Receiver.start((_received, response) => {
      response.writeHead(status, { location: `${elsewhere.url}/internal` }).end();
    });
    const { relay, send } = await formB(receiver);
    await send(script({ message: 'once' }));
    await until(() => delivered(relay, 'delivery.abandoned').length === 1, 'abandoned');
    expect(delivered(relay, 'delivery.abandoned')[0]).toMatchObject({ reason: 'permanent', attempts: 1, outcome: `status ${status}` });
    expect(receiver.requests).toHaveLength(1);
    expect(elsewhere.requests).toHaveLength(0);
  });

  it('a receiver that never answers is timed out after 5 s', async () => {
    const clock = new SimulatedClock();
    const receiver = await Receiver.start(() => {});
    const { relay, send } = await formB(receiver, 's-b', { clock });
    await send(script({ message: 'anyone?' }));
    await until(() => receiver.requests.length === 1, 'the attempt reached the receiver');
    clock.increment(4_999);
    await aMoment();
    expect(delivered(relay, 'delivery.failed')).toEqual([]);
    clock.increment(1);
    await until(() => delivered(relay, 'delivery.failed').length === 1, 'the first attempt timed out');
    const [attempted] = delivered(relay, 'delivery.attempted');
    const [failed] = delivered(relay, 'delivery.failed');
    expect(failed).toMatchObject({ attempt: 1, outcome: 'timeout' });
    expect(failed!.at - attempted!.at).toBe(5_000);
  });

  it('messages of one session are delivered in order: a later one waits for the earlier one', async () => {
    const clock = new SimulatedClock();
    const receiver = await Receiver.start(statuses(503, 200));
    const { relay, send } = await formB(receiver, 's-b', { clock });
    await send(script({ message: 'first' }, { message: 'second' }, { message: 'third' }));
    await until(() => delivered(relay, 'reply.queued').length === 3, 'all three queued');
    await retryAt(relay, clock, 1);
    await until(() => delivered(relay, 'delivery.succeeded').length === 3, 'all delivered');
    const texts = receiver.requests.map((r) => (JSON.parse(r.body) as { reply_text: string }).reply_text);
    expect(texts).toEqual(['first', 'first', 'second', 'third']);
  });

  it('a callback answering session_ended ends the session here too; what was still queued is abandoned', async () => {
    let released: () => void = () => {};
    const gate = new Promise<void>((resolve) => (released = resolve));
    const receiver = await Receiver.start((_received, response) => {
      void gate.then(() =>
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true,"ignored":true,"reason":"session_ended"}'),
      );
    });
    const { relay, send } = await formB(receiver);
    await send(script({ message: 'a' }, { message: 'b' }));
    await until(() => delivered(relay, 'reply.queued').length === 2, 'both queued');
    released();
    await until(() => relay.t.host.session('s-b')?.state === 'ended', 'the session ended');
    expect(relay.t.host.session('s-b')).toMatchObject({ end_reason: 'client', callbacks: { queued: 0, succeeded: 1, abandoned: 1 } });
    expect(delivered(relay, 'delivery.abandoned')[0]).toMatchObject({ reason: 'session_ended', attempts: 0 });
    expect(receiver.requests).toHaveLength(1);
    const later = await post(relay.url, TOKEN, { session_id: 's-b', task_id: randomUUID(), text: 'hello?' });
    expect(later.body).toEqual({ ok: true, ignored: true, reason: 'session_ended' });
  });

  it('the callback token appears in no log line', async () => {
    const lines: string[] = [];
    const { pino } = await import('pino');
    const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
    const receiver = await Receiver.start(statuses(404));
    const relay = await Relay.start({ form: 'B', logger });
    const response = await post(relay.url, TOKEN, {
      session_id: 's',
      task_id: randomUUID(),
      text: 'x',
      callback: { url: receiver.url, token: CALLBACK_TOKEN },
    });
    expect(response.status).toBe(202);
    // The echo agent's typing and message: each refused once with 404, and given up.
    await until(() => delivered(relay, 'delivery.abandoned').length === 2, 'both abandoned');
    expect(lines.some((line) => line.includes('callback delivery abandoned'))).toBe(true);
    expect(lines.filter((line) => line.includes(CALLBACK_TOKEN))).toEqual([]);
  });
});

describe('a slow receiver gets the latest progress, not every one (4.2 rule 4, as on the stream)', () => {
  /** A receiver whose first POST hangs until released: everything after it queues behind. */
  async function heldReceiver(): Promise<{ receiver: Receiver; release: () => void }> {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const receiver = await Receiver.start((_received, response) => {
      const first = receiver.requests.length === 1;
      void (first ? held : Promise.resolve()).then(() => response.writeHead(200).end());
    });
    return { receiver, release };
  }

  it('progress queued behind a delivery in flight is coalesced by task; the reply still follows', async () => {
    const { receiver, release } = await heldReceiver();
    const { relay, send } = await formB(receiver);
    await send(script({ typing: 'a' }, { sleep: 50 }, { typing: 'b' }, { typing: 'c' }, { typing: 'd' }, { message: 'done' }));
    await until(() => delivered(relay, 'reply.queued').length === 5, 'every reply queued');
    release();
    await until(() => relay.t.host.deliveryStats().queued === 0, 'the outbox empty');
    expect(receiver.requests.map((r) => JSON.parse(r.body) as { status: string; label?: string; reply_text?: string })).toEqual([
      expect.objectContaining({ status: 'typing', label: 'a' }),
      expect.objectContaining({ status: 'message', reply_text: 'done' }),
    ]);
    // Coalesced progress is neither delivered nor abandoned: it never was anything but live.
    expect(relay.t.host.deliveryStats()).toEqual({ queued: 0, succeeded: 2, abandoned: 0 });
  });

  it("an older agent's one-shot statuses are carried through, tool_call too, however long they wait (PROTOCOL.md 3b.4)", async () => {
    const { receiver, release } = await heldReceiver();
    const { relay, send } = await formB(receiver);
    await send(
      script(
        { message: 'first' },
        { completed: true },
        { tool_call: 'lookup' },
        { silent: true },
        { errored: { code: 'e', message: 'm' } },
        { message: 'last' },
      ),
    );
    await until(() => delivered(relay, 'reply.queued').length === 6, 'every reply queued');
    release();
    await until(() => relay.t.host.deliveryStats().queued === 0, 'the outbox empty');
    expect(receiver.requests.map((r) => (JSON.parse(r.body) as { status: string }).status)).toEqual([
      'message',
      'completed',
      'tool_call',
      'silent',
      'errored',
      'message',
    ]);
    expect(relay.t.host.deliveryStats()).toEqual({ queued: 0, succeeded: 6, abandoned: 0 });
  });
});

describe('Form A: a task with a callback block (4.3 rule 1)', () => {
  it('posts the task replies, progress included, to the callback instead of the stream', async () => {
    const receiver = await Receiver.start();
    const relay = await Relay.start();
    const stream = await relay.subscribe('s-a');
    const response = await post(relay.url, TOKEN, {
      session_id: 's-a',
      task_id: 't1',
      text: script({ typing: 'working' }, { message: 'done' }),
      callback: { url: receiver.url, token: CALLBACK_TOKEN },
    });
    expect(response.status).toBe(202);
    await until(() => receiver.requests.length === 2, 'two callback POSTs');
    expect(receiver.requests.map((r) => [r.url, JSON.parse(r.body)])).toEqual([
      ['/tasks/t1', { session_id: 's-a', status: 'typing', label: 'working' }],
      ['/tasks/t1', { session_id: 's-a', status: 'message', message_id: expect.any(String), reply_text: 'done' }],
    ]);
    await until(() => relay.t.host.deliveryStats().succeeded === 2, 'both deliveries logged');
    await relay.turn('s-a', 't2', { message: 'on the stream' });
    await relay.settled('t2');
    expect(stream.replies.map((r) => r.json)).toEqual([expect.objectContaining({ task_id: 't2', reply_text: 'on the stream' })]);
    expect(relay.taskSession('s-a')).toMatchObject({ pending_task_ids: [], backlog: [{ task_id: 't2' }], callbacks: { succeeded: 2 } });
  });
});
