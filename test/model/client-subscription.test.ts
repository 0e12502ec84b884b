/**
 * The client's subscription statechart (one session's stream), model-based (model.ts): each transition
 * driven through the client library against a real host over loopback HTTP, one fresh session a path.
 * A proxy holds each stream request before the host, then sends it on or answers it 503 (`Retry-After:
 * 1`), and cuts streams; a terminal reply is a task the test posts and the agent answers. After each step
 * the client's statechart must have taken the event (`inspect`), be in the machine's state, and the
 * host must hold as many readers of the session as the state says (one while open, none otherwise).
 */
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { FormAClient } from '../../adapters/client/form-a.js';
import type { ClientTransition } from '../../adapters/client/form-a-options.js';
import {
  clientSubscriptionMachine,
  type ClientSubscriptionEvent,
  type ClientSubscriptionSnapshot,
} from '../../machines/client/client-subscription.js';
import { startHost, TOKEN, type TestHost } from '../support/host.js';
import { post, request } from '../support/http.js';
import { cuttableProxy, type CuttableProxy } from '../support/proxy.js';
import { eventually, waitFor } from '../support/wait.js';
import { HeldAgent } from './held-agent.js';
import { describeModel, Taken } from './model.js';

/** After a dropped stream: a wait of about this long (full jitter drawn at its top), in which `close` can come. */
const BACKOFF_MS = 300;

const agent = new HeldAgent();
let t: TestHost;
let sessions = 0;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  t = await startHost({ agent });
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await t?.cleanup();
});

interface Subject {
  readonly session: string;
  readonly proxy: CuttableProxy;
  readonly client: FormAClient;
  /** The events the statechart took, and where it is. */
  readonly taken: Taken;
  snapshot: ClientSubscriptionSnapshot | undefined;
  replies: number;
}

const readersOf = async (session: string) =>
  ((await request(`${t.url}/v1/sessions/${session}`, { token: TOKEN })).body as { readers: number }).readers;

describeModel<Subject, ClientSubscriptionEvent>('client subscription', {
  machine: clientSubscriptionMachine,
  input: { session_id: 's' },
  events: [
    { type: 'stream.opened', at: 1 },
    { type: 'stream.failed', retry_at: 2, at: 1 },
    { type: 'stream.dropped', retry_at: 2, at: 1 },
    { type: 'reply.id', id: '1:1:1', at: 1 },
    { type: 'retry', at: 2 },
    { type: 'close', at: 3 },
  ],
  // A session the host knows, and a client holding its stream (as an Insights recording does), its request held.
  async start() {
    const session = `client-subscription-${(sessions += 1)}`;
    expect((await post(t.url, TOKEN, { session_id: session, task_id: 'opening', text: 'hello' })).status).toBe(202);
    const proxy = await cuttableProxy(t.url);
    proxy.holdingStreams = true;
    const subject: Subject = {
      session,
      proxy,
      client: undefined as never,
      taken: new Taken("the client's subscription"),
      snapshot: undefined,
      replies: 0,
    };
    const inspect = (step: ClientTransition) => {
      if (step.machine !== 'clientSubscription' || step.session_id !== session) return;
      subject.taken.add(step.event.type);
      subject.snapshot = step.snapshot;
    };
    const client = new FormAClient({
      url: proxy.url,
      token: TOKEN,
      backoff: { baseMs: BACKOFF_MS, capMs: BACKOFF_MS },
      random: () => 0.999,
      inspect,
    });
    Object.assign(subject, { client });
    cleanups.push(async () => {
      client.close();
      proxy.cut();
      await proxy.close();
    });
    void client.hold(session).catch(() => undefined);
    await waitFor('the stream request held', () => proxy.heldStreams === 1, { everyMs: 10 });
    return subject;
  },
  drivers: {
    'stream.opened': async (subject) => subject.proxy.answerStreams(),
    'stream.failed': async (subject) => subject.proxy.answerStreams(503),
    'stream.dropped': async (subject) => subject.proxy.cutStreams(),
    'reply.id': async (subject) => {
      const task = `reply-${(subject.replies += 1)}`;
      expect((await post(t.url, TOKEN, { session_id: subject.session, task_id: task, text: 'hello' })).status).toBe(202);
      await waitFor(`the agent to get ${task}`, () => agent.has(subject.session, task), { everyMs: 10 });
      await agent.reply(subject.session, task).message('an answer');
    },
    // The wait runs out by itself (the next request is held again).
    retry: async (subject) =>
      waitFor('the stream request held again', () => subject.proxy.heldStreams === 1, { timeoutMs: 5_000, everyMs: 10 }),
    close: async (subject) => subject.client.close(),
  },
  async check(subject, event, to) {
    await subject.taken.next(event.type);
    expect(subject.snapshot?.value, `the subscription after ${event.type}`).toEqual(to.value);
    const readers = to.value === 'open' ? 1 : 0;
    await eventually(
      `${readers} reader(s) of ${subject.session} at the host`,
      () => readersOf(subject.session),
      (n) => n === readers,
      { everyMs: 10 },
    );
    if (event.type === 'reply.id') expect(subject.client.cursor(subject.session)).toMatch(/^[0-9a-z]+:[0-9a-z]+:[0-9a-z]+$/);
  },
});
