/**
 * The host's task statechart (3.1), model-based (model.ts): each transition driven through a real host
 * over loopback HTTP, one fresh task (and session) a path, by what the held agent says; after each step
 * the log must hold the event for the task, `GET /v1/sessions/{id}` must list it as pending or not, and
 * the session's stream must show what a client sees of it: progress without an id, the terminal reply
 * with the next id.
 */
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { taskMachine, type TaskMachineEvent } from '../../machines/chat/task.js';
import { startHost, TOKEN, type TestHost } from '../support/host.js';
import { post, request } from '../support/http.js';
import { SseConnection } from '../support/sse.js';
import { waitFor } from '../support/wait.js';
import { HeldAgent } from './held-agent.js';
import { describeModel, untilLogged } from './model.js';

const TASK = 'subject';
const agent = new HeldAgent();
let t: TestHost;
let sessions = 0;
const streams: SseConnection[] = [];

beforeAll(async () => {
  t = await startHost({ agent });
});

afterEach(() => {
  for (const stream of streams.splice(0)) stream.close();
});

afterAll(async () => {
  await t?.cleanup();
});

interface Subject {
  readonly session: string;
  readonly stream: SseConnection;
  readonly logged: Map<string, number>;
  /** Frames of this task the stream showed so far. */
  frames: number;
}

const LOGGED = { 'reply.progress': 'task.progressed', 'reply.terminal': 'task.settled' } as const;

describeModel<Subject, TaskMachineEvent>('task', {
  machine: taskMachine,
  input: { task_id: 't', at: 0 },
  events: [
    { type: 'reply.progress', at: 1 },
    { type: 'reply.terminal', reply: { session_id: 's', task_id: 't', status: 'completed' }, at: 2 },
  ],
  // The client subscribes first (3.1), then sends the message that starts the task.
  async start() {
    const session = `task-${(sessions += 1)}`;
    const stream = await SseConnection.open(`${t.url}/v1/events?session_id=${session}`, { token: TOKEN });
    streams.push(stream);
    expect((await post(t.url, TOKEN, { session_id: session, task_id: TASK, text: 'hello' })).status).toBe(202);
    await waitFor(`the agent to get ${TASK}`, () => agent.has(session, TASK), { everyMs: 10 });
    return { session, stream, logged: new Map([['task.started', 1]]), frames: 0 };
  },
  drivers: {
    'reply.progress': async (subject) => agent.reply(subject.session, TASK).typing('thinking'),
    'reply.terminal': async (subject) => agent.reply(subject.session, TASK).message('the answer'),
  },
  async check(subject, event, to) {
    await untilLogged(
      { db: t.db, name: `${subject.session}/${TASK}`, about: (logged) => logged.session_id === subject.session && logged.task_id === TASK },
      LOGGED[event.type],
      subject.logged,
    );
    const view = (await request(`${t.url}/v1/sessions/${subject.session}`, { token: TOKEN })).body as { pending_task_ids: string[] };
    expect(view.pending_task_ids.includes(TASK), `${TASK} pending after ${event.type}`).toBe(to.value === 'pending');
    subject.frames += 1;
    await subject.stream.until((stream) => stream.frames.length >= subject.frames, 5_000, `frame ${subject.frames}`);
    const frame = subject.stream.frames[subject.frames - 1]!;
    expect(JSON.parse(frame.data)).toMatchObject({ task_id: TASK, status: event.type === 'reply.progress' ? 'typing' : 'message' });
    expect(frame.id === undefined, 'progress has no id, a terminal reply has one').toBe(event.type === 'reply.progress');
  },
});
