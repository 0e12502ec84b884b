/**
 * The Form A session statechart, model-based (model.ts): each transition driven through a real host
 * over loopback HTTP, one fresh session a path, by a client's message or by what the agent does with a
 * task (an agent the test holds: progress, a reply, a reply again once the task settled, ending the
 * session); after each step the log must hold the event for the session, and `GET /v1/sessions/{id}`
 * its state.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import type { TaskSessionEvent } from '../../machines/chat/events.js';
import { taskSessionMachine } from '../../machines/chat/task-session.js';
import { startHost, TOKEN, type TestHost } from '../support/host.js';
import { post } from '../support/http.js';
import { waitFor } from '../support/wait.js';
import { HeldAgent } from './held-agent.js';
import { describeModel, followedInView } from './model.js';

const S = { session_id: 's' };

/** Its runs last until the session ends: the test says what the agent does, and when. */
const agent = new HeldAgent();

let t: TestHost;
let sessions = 0;

beforeAll(async () => {
  t = await startHost({ agent });
});

afterAll(async () => {
  await t?.cleanup();
});

interface Session {
  readonly id: string;
  readonly tasks: string[];
  readonly settled: Set<string>;
  readonly seen: Map<string, number>;
}

async function send(session: Session): Promise<string> {
  const task = `t${session.tasks.length}`;
  expect((await post(t.url, TOKEN, { session_id: session.id, task_id: task, text: 'hello' })).status).toBe(202);
  session.tasks.push(task);
  await waitFor(`the agent to get ${task}`, () => agent.has(session.id, task), { everyMs: 10 });
  return task;
}

/** A task still pending, started for the purpose if there is none. */
async function pending(session: Session): Promise<string> {
  return session.tasks.find((task) => !session.settled.has(task)) ?? (await send(session));
}

const sinkOf = (session: Session, task: string) => agent.reply(session.id, task);

describeModel<Session, TaskSessionEvent>('session', {
  machine: taskSessionMachine,
  input: {
    opened: { type: 'session.opened', ...S, generation: 'g', form: 'A', at: 1 },
    limits: {
      maxReplies: 64,
      maxBytes: 1 << 20,
      ledgerMaxTasks: 1024,
      maxSpans: 64,
      memoryMaxEntries: 200,
      memoryMaxChars: 1 << 20,
      taskIdWindow: 1024,
    },
  },
  events: [
    { type: 'task.started', ...S, task_id: 't', text: 'a', at: 2 },
    { type: 'task.progressed', ...S, task_id: 't', reply: { ...S, task_id: 't', status: 'typing', label: 'x' }, at: 3 },
    {
      type: 'task.settled',
      ...S,
      task_id: 't',
      reply: { ...S, task_id: 't', status: 'completed' },
      cause: 'agent',
      epoch: 'e',
      seq: 1,
      data: '{}',
      at: 4,
    },
    { type: 'reply.dropped', ...S, task_id: 't', status: 'message', reason: 'task_unknown', at: 5 },
    { type: 'session.ended', ...S, reason: 'host', at: 6 },
  ] as TaskSessionEvent[],
  // The first message opens the session (and starts a task, which the later steps may use).
  async start() {
    const session: Session = { id: `model-${(sessions += 1)}`, tasks: [], settled: new Set(), seen: new Map() };
    await send(session);
    session.seen.set('task.started', 1);
    return session;
  },
  drivers: {
    'task.started': async (session) => void (await send(session)),
    'task.progressed': async (session) => sinkOf(session, await pending(session)).typing('thinking'),
    'task.settled': async (session) => {
      const task = await pending(session);
      await sinkOf(session, task).message('the answer');
      session.settled.add(task);
    },
    // A reply for a task already settled (or, once the session ended, for any).
    'reply.dropped': async (session, from) => {
      let task = [...session.settled][0] ?? session.tasks[0]!;
      if (from.value === 'open' && !session.settled.has(task)) {
        await sinkOf(session, task).message('the answer');
        session.settled.add(task);
        task = [...session.settled][0]!;
      }
      await sinkOf(session, task).message('again');
    },
    'session.ended': async (session) => {
      expect(await t.host.endSession(session.id)).toBe(true);
      for (const task of session.tasks) session.settled.add(task);
    },
  },
  async check(session, event, to) {
    await followedInView({ ...t, token: TOKEN }, session, event, to, ['task.started', 'task.settled']);
  },
});
