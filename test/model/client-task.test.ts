/**
 * The client's task statechart, model-based (model.ts): each transition driven through the client
 * library against a real host over loopback HTTP, one fresh task a path. A proxy between them holds the
 * task's POST (so that progress, the reply or a resync can come before its 202, as from a quick agent)
 * and cuts or refuses the session's stream; the agent is held, so the path says when it speaks. After
 * each step the client's statechart must have taken the event (its `inspect` says so), the task must be
 * in the machine's state, and what its handle shows (progress, the reply, the failure) must follow.
 */
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { FormAClient } from '../../adapters/client/form-a.js';
import type { ClientTransition } from '../../adapters/client/form-a-options.js';
import type { TaskHandle } from '../../adapters/client/task.js';
import { clientTaskMachine, type ClientTaskEvent } from '../../machines/client/client-task.js';
import { startHost, TOKEN, type TestHost } from '../support/host.js';
import { post } from '../support/http.js';
import { cuttableProxy, type CuttableProxy } from '../support/proxy.js';
import { waitFor } from '../support/wait.js';
import { HeldAgent } from './held-agent.js';
import { describeModel, Taken, untilLogged } from './model.js';

const TASK = 'subject';
/** Started beside the subject, straight at the host: it makes the session exist, and its reply evicts the subject's. */
const OTHER = 'other';

const agent = new HeldAgent();
let t: TestHost;
let sessions = 0;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  // One retained reply: the next terminal reply of the session evicts the one before.
  t = await startHost({ agent, limits: { maxReplies: 1 } });
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
  readonly handle: TaskHandle;
  readonly client: FormAClient;
  /** The events the client's task statechart took. */
  readonly taken: Taken;
  readonly progress: string[];
  /** Events of the host's log about this session, by type, as `untilLogged` counts them. */
  readonly logged: Map<string, number>;
}

const log = (subject: Subject) => ({
  db: t.db,
  name: subject.session,
  about: (event: Record<string, unknown>) => event.session_id === subject.session,
});

/** The host has the task: a held POST is let through (its answer still held, if it was). */
async function atHost(subject: Subject): Promise<void> {
  if (subject.proxy.incoming === 'held') subject.proxy.incoming = 'forwarded';
  await waitFor(`the agent to get ${subject.session}/${TASK}`, () => agent.has(subject.session, TASK), { everyMs: 10 });
}

async function replyOf(subject: Subject, task: string, text: string): Promise<void> {
  await agent.reply(subject.session, task).message(text);
  await untilLogged(log(subject), 'task.settled', subject.logged);
}

describeModel<Subject, ClientTaskEvent>('client task', {
  machine: clientTaskMachine,
  input: { session_id: 's', task_id: 't', at: 0 },
  events: [
    { type: 'task.accepted', at: 1 },
    { type: 'task.refused', code: 'session_ended', message: 'the session has ended', at: 1 },
    { type: 'reply.progress', reply: { session_id: 's', task_id: 't', status: 'typing', label: 'x' }, at: 1 },
    { type: 'reply.terminal', reply: { session_id: 's', task_id: 't', status: 'completed' }, at: 1 },
    { type: 'resync.missed', at: 1 },
    { type: 'resync.unlisted', at: 1 },
  ],
  // The session opened by another task straight at the host; the subject sent through the client, its POST held.
  async start() {
    const session = `client-task-${(sessions += 1)}`;
    expect((await post(t.url, TOKEN, { session_id: session, task_id: OTHER, text: 'beside' })).status).toBe(202);
    const proxy = await cuttableProxy(t.url);
    proxy.incoming = 'held';
    const taken = new Taken("the client's task");
    const inspect = (step: ClientTransition) => {
      if (step.machine === 'clientTask' && step.task_id === TASK) taken.add(step.event.type);
    };
    const client = new FormAClient({ url: proxy.url, token: TOKEN, backoff: { baseMs: 20, capMs: 100 }, inspect });
    cleanups.push(async () => {
      client.close();
      proxy.incoming = 'passing';
      proxy.cut();
      await proxy.close();
    });
    const handle = client.send(session, 'hello', { task_id: TASK });
    const progress: string[] = [];
    handle.onProgress((reply) => progress.push(reply.status === 'typing' ? reply.label : reply.status));
    await waitFor('the POST held', () => proxy.heldIncoming === 1, { everyMs: 10 });
    return { session, proxy, client, handle, taken, progress, logged: new Map([['task.started', 1]]) };
  },
  drivers: {
    'task.accepted': async (subject) => {
      subject.proxy.incoming = 'passing';
    },
    // The session ends before the POST reaches the host: its stream ends, and the POST is answered `ignored`.
    'task.refused': async (subject) => {
      expect(await t.host.endSession(subject.session)).toBe(true);
      subject.proxy.incoming = 'passing';
    },
    'reply.progress': async (subject) => {
      await atHost(subject);
      await agent.reply(subject.session, TASK).typing('thinking');
    },
    'reply.terminal': async (subject) => {
      await atHost(subject);
      await agent.reply(subject.session, TASK).message('the answer');
    },
    // The reply comes while the stream is away and is evicted by the next one; the stream comes back.
    'resync.missed': async (subject) => {
      await atHost(subject);
      subject.proxy.refusingStreams = true;
      subject.proxy.cutStreams();
      await replyOf(subject, TASK, 'never read');
      await replyOf(subject, OTHER, 'evicts it');
      subject.proxy.refusingStreams = false;
    },
    // A stream cut and opened again: its resync frame names nothing.
    'resync.unlisted': async (subject) => {
      subject.proxy.cutStreams();
    },
  },
  async check(subject, event, to) {
    await subject.taken.next(event.type);
    expect(subject.handle.state.value, `the task after ${event.type}`).toEqual(to.value);
    switch (event.type) {
      case 'reply.progress':
        expect(subject.progress.at(-1)).toBe('thinking');
        break;
      case 'reply.terminal':
        expect(await subject.handle.reply).toMatchObject({ task_id: TASK, status: 'message', reply_text: 'the answer' });
        break;
      case 'resync.missed':
        await expect(subject.handle.reply).rejects.toMatchObject({ kind: 'lost' });
        break;
      case 'task.refused':
        await expect(subject.handle.reply).rejects.toMatchObject({ kind: 'refused', reason: 'session_ended' });
        break;
      default:
        break;
    }
    // Rule 3: the stream closes once no task waits on it (the session's other task is not this client's).
    if (to.status === 'done')
      await waitFor('the stream closed', () => subject.client.subscription(subject.session) === undefined, { everyMs: 10 });
  },
});
