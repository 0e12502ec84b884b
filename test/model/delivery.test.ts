/**
 * The callback-delivery statechart, model-based (model.ts): each transition driven through a real Form B
 * host, its clock simulated, posting to a callback the test answers by hand. One fresh conversation a
 * path; the subject is its second delivery, a `typing` progress queued behind the first (a message whose
 * POST the callback holds), so that it starts out waiting. The callback answering 200, 503 or 404, or
 * "session ended" to the first; the agent's later message for the same task; time passing a backoff; and
 * a restart of the host while an attempt is in flight make the events happen. After each step the log
 * must hold the event for delivery 2, and the host's delivery counts say where it is.
 */
import { randomUUID } from 'node:crypto';
import type * as http from 'node:http';
import { afterAll, beforeAll, expect } from 'vitest';
import { deliveryMachine } from '../../machines/chat/delivery.js';
import type { DeliveryEvent } from '../../machines/chat/events.js';
import { SimulatedClock } from '../support/clock.js';
import { startHost, tempDir, TOKEN, type TestHost } from '../support/host.js';
import { post } from '../support/http.js';
import { Receiver, type Received } from '../support/receiver.js';
import { waitFor } from '../support/wait.js';
import { HeldAgent } from './held-agent.js';
import { describeModel, untilLogged } from './model.js';

const agent = new HeldAgent();

/** POSTs the callback has not answered yet, oldest first. */
const held: Array<{ readonly received: Received; readonly response: http.ServerResponse }> = [];
const clock = new SimulatedClock();
const dir = tempDir();
let receiver: Receiver;
let t: TestHost;
let conversations = 0;

const start = () => startHost({ dir, agent, form: 'B', clock, callbackLoopback: true });

beforeAll(async () => {
  receiver = await Receiver.start((received, response) => void held.push({ received, response }));
  t = await start();
});

afterAll(async () => {
  for (const { response } of held.splice(0)) response.destroy();
  await t?.cleanup();
  await receiver?.close();
});

interface Subject {
  readonly session: string;
  /** The one message of the conversation, whose run's replies are deliveries 1 and 2. */
  readonly task: string;
  readonly seen: Map<string, number>;
  /** Delivery 1 was answered (it was delivered: a "session ended" comes with a 200). */
  firstAnswered: boolean;
  /** Deliveries queued after delivery 2 (the agent's answer; the error a restart gives the run it cut off). */
  later: number;
}

/** The POST of `session` the callback holds (a session's deliveries go one at a time). */
const pendingOf = (session: string) => held.findIndex(({ received }) => received.url.startsWith(`/cb/${session}/`));

async function answer(subject: Subject, status: number, body = ''): Promise<void> {
  await waitFor(`a POST of ${subject.session} to answer`, () => pendingOf(subject.session) >= 0, { everyMs: 10 });
  const [entry] = held.splice(pendingOf(subject.session), 1);
  entry!.response.writeHead(status, { 'content-type': 'application/json' }).end(body);
}

const countsOf = (subject: Subject) =>
  (t.host.session(subject.session) as { callbacks: { queued: number; succeeded: number; abandoned: number } }).callbacks;

describeModel<Subject, DeliveryEvent>('delivery', {
  machine: deliveryMachine,
  input: {
    session_id: 's',
    delivery: { n: 2, task_id: 't' },
    callback: { url: 'http://127.0.0.1:9/cb', token: 'k' },
    body: '{}',
    progress: true,
    at: 1,
  },
  events: [
    { type: 'delivery.attempted', session_id: 's', n: 2, attempt: 1, at: 2 },
    { type: 'delivery.failed', session_id: 's', n: 2, attempt: 1, outcome: 'status 503', retry_at: 10, at: 3 },
    { type: 'delivery.succeeded', session_id: 's', n: 2, attempt: 1, status: 200, at: 4 },
    { type: 'delivery.abandoned', session_id: 's', n: 2, attempts: 1, reason: 'permanent', outcome: 'status 404', at: 5 },
    { type: 'delivery.interrupted', session_id: 's', n: 2, attempt: 1, at: 6 },
    { type: 'delivery.superseded', session_id: 's', n: 2, by: 3, at: 7 },
  ] as DeliveryEvent[],
  // Delivery 1, a message, is on its way (its POST held); delivery 2, progress of the same task, waits behind it.
  async start() {
    const session = `model-${(conversations += 1)}`;
    const task = randomUUID();
    expect(
      (
        await post(t.url, TOKEN, {
          session_id: session,
          task_id: task,
          text: 'hello',
          callback: { url: `${receiver.url}/cb/${session}`, token: 'callback-token' },
        })
      ).status,
    ).toBe(202);
    await waitFor('the agent to get the message', () => agent.has(session, task), { everyMs: 10 });
    await agent.reply(session, task).message('first');
    await waitFor('delivery 1 on its way', () => pendingOf(session) >= 0, { everyMs: 10 });
    await agent.reply(session, task).typing('thinking');
    const subject: Subject = { session, task, seen: new Map(), firstAnswered: false, later: 0 };
    await waitFor('delivery 2 queued', () => countsOf(subject).queued === 2, { everyMs: 10 });
    return subject;
  },
  drivers: {
    // Delivery 1 answered (it goes first), or, once delivery 2 failed, its backoff passed.
    'delivery.attempted': async (subject) => {
      if (subject.firstAnswered) return clock.increment(1_100);
      await answer(subject, 200);
      subject.firstAnswered = true;
    },
    'delivery.failed': (subject) => answer(subject, 503),
    'delivery.succeeded': (subject) => answer(subject, 200),
    // Refused while being posted; or, while it waits, the client says the session ended (in its answer to delivery 1).
    'delivery.abandoned': async (subject, from) => {
      if (from.value === 'attempting') return answer(subject, 404);
      await answer(subject, 200, '{"ok":true,"ignored":true,"reason":"session_ended"}');
      subject.firstAnswered = true;
    },
    // The agent's answer to the task replaces its progress that still waits.
    'delivery.superseded': async (subject) => {
      await agent.reply(subject.session, subject.task).message('the answer');
      subject.later += 1;
    },
    // The host stops with the POST in flight; the next start finds the attempt without an outcome.
    'delivery.interrupted': async (subject) => {
      await t.close();
      t = await start();
      subject.later += 1;
    },
  },
  async check(subject, event, to) {
    await untilLogged(
      { db: t.db, name: `${subject.session} delivery 2`, about: (logged) => logged.session_id === subject.session && logged.n === 2 },
      event.type,
      subject.seen,
    );
    const first = subject.firstAnswered ? { queued: 0, succeeded: 1 } : { queued: 1, succeeded: 0 };
    expect(countsOf(subject), `${subject.session} after delivery 2's ${event.type}`).toEqual({
      queued: first.queued + (to.value === 'waiting' || to.value === 'attempting' ? 1 : 0) + subject.later,
      succeeded: first.succeeded + (to.value === 'succeeded' ? 1 : 0),
      abandoned: to.value === 'abandoned' ? 1 : 0,
    });
  },
});
