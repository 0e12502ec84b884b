/**
 * The Form B conversation statechart, model-based (model.ts): each transition driven through a real
 * Form B host over loopback HTTP, one fresh conversation a path, by a client's message or by what the
 * agent does with its run (an agent the test holds: a message, ending its run, speaking after the
 * session ended, ending the session); the callback answers every POST with 200.
 * After each step the log must hold the event for the session, and `GET /v1/sessions/{id}` its state.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import { conversationMachine } from '../../machines/chat/conversation.js';
import type { ConversationEvent } from '../../machines/chat/events.js';
import { startHost, TOKEN, type TestHost } from '../support/host.js';
import { post } from '../support/http.js';
import { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait.js';
import { HeldAgent } from './held-agent.js';
import { describeModel, followedInView } from './model.js';

const S = { session_id: 's' };

const agent = new HeldAgent();

let t: TestHost;
let receiver: Receiver;
let conversations = 0;

beforeAll(async () => {
  receiver = await Receiver.start();
  t = await startHost({ agent, form: 'B', callbackLoopback: true });
});

afterAll(async () => {
  await t?.cleanup();
  await receiver?.close();
});

interface Conversation {
  readonly id: string;
  readonly tasks: string[];
  readonly finished: Set<string>;
  readonly seen: Map<string, number>;
}

async function send(conversation: Conversation): Promise<string> {
  const task = randomUUID();
  const answer = await post(t.url, TOKEN, {
    session_id: conversation.id,
    task_id: task,
    text: 'hello',
    callback: { url: `${receiver.url}/cb`, token: 'callback-token' },
  });
  expect(answer.status).toBe(202);
  conversation.tasks.push(task);
  await waitFor(`the agent to get ${task}`, () => agent.has(conversation.id, task), { everyMs: 10 });
  return task;
}

/** A run still going, started for the purpose if there is none. */
async function running(conversation: Conversation): Promise<string> {
  return conversation.tasks.find((task) => !conversation.finished.has(task)) ?? (await send(conversation));
}

function finish(conversation: Conversation, task: string): void {
  agent.finish(conversation.id, task);
  conversation.finished.add(task);
}

describeModel<Conversation, ConversationEvent>('conversation', {
  machine: conversationMachine,
  input: {
    opened: { type: 'session.opened', ...S, generation: 'g', form: 'B', at: 1 },
    limits: { memoryMaxEntries: 200, memoryMaxChars: 1 << 20, taskIdWindow: 1024 },
  },
  events: [
    { type: 'message.received', ...S, task_id: 'u', text: 'a', at: 2 },
    {
      type: 'reply.queued',
      ...S,
      reply: { ...S, status: 'message', message_id: 'm', reply_text: 'hi' },
      cause: 'agent',
      delivery: { n: 1, task_id: 'u' },
      at: 3,
    },
    { type: 'turn.finished', ...S, task_id: 'u', at: 4 },
    { type: 'reply.dropped', ...S, task_id: 'u', status: 'message', reason: 'session_ended', at: 5 },
    { type: 'session.ended', ...S, reason: 'host', at: 6 },
  ] as ConversationEvent[],
  // The first message opens the conversation (and starts a run, which the later steps may use).
  async start() {
    const conversation: Conversation = { id: `model-${(conversations += 1)}`, tasks: [], finished: new Set(), seen: new Map() };
    await send(conversation);
    conversation.seen.set('message.received', 1);
    return conversation;
  },
  drivers: {
    'message.received': async (conversation) => void (await send(conversation)),
    'reply.queued': async (conversation) => agent.reply(conversation.id, await running(conversation)).message('an answer'),
    'turn.finished': async (conversation) => finish(conversation, await running(conversation)),
    // The agent speaks after the session ended (while it is open, whatever it says is queued).
    'reply.dropped': async (conversation) => agent.reply(conversation.id, conversation.tasks[0]!).message('too late'),
    'session.ended': async (conversation) => {
      expect(await t.host.endSession(conversation.id)).toBe(true);
      for (const task of conversation.tasks) conversation.finished.add(task);
    },
  },
  async check(conversation, event, to) {
    await followedInView({ ...t, token: TOKEN }, conversation, event, to, ['message.received', 'turn.finished']);
  },
});
