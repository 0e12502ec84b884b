/** Insights sessions (1.7, 4.4): standing context, one-sentence replies, and memory apart from the chat. */
import { afterEach, expect, it } from 'vitest';
import type { Agent, Turn } from '../../index.js';
import { post } from '../support/http.js';
import { Relay, TOKEN, stopAll } from './fixture.js';

afterEach(stopAll);

/** Records every turn and answers with two sentences over two lines. */
function recordingAgent(): Agent & { readonly turns: Turn[] } {
  const turns: Turn[] = [];
  return {
    name: 'recording',
    turns,
    async respond(turn, reply) {
      turns.push({ ...turn, memory: [...turn.memory] });
      await reply.message(`Noted: ${turn.text}. And a second sentence\nthat should never reach the Insights tab.`);
    },
  };
}

const PRELUDE = 'Situation: discovery call. Playbook: MEDDIC. Reply with one sentence.';

it('keeps the prelude as standing context, cuts replies to one sentence, and never mixes memory with the chat', async () => {
  const agent = recordingAgent();
  const relay = await Relay.start({ agent });
  const insights = await relay.subscribe('insights:call-1');
  const chat = await relay.subscribe('call-1');
  const send = async (session_id: string, task_id: string, text: string, extra: Record<string, unknown> = {}) => {
    expect((await post(relay.url, TOKEN, { session_id, task_id, text, ...extra })).status).toBe(202);
    await relay.settled(task_id);
  };
  await send('insights:call-1', 'i1', 'transcript chunk one', { system_prelude: PRELUDE });
  await send('call-1', 'c1', 'chat question one');
  await send('insights:call-1', 'i2', 'transcript chunk two');
  await send('call-1', 'c2', 'chat question two');

  const turn = (task: string) => agent.turns.find((t) => t.task_id === task)!;
  expect([turn('i1').system_prelude, turn('i2').system_prelude]).toEqual([PRELUDE, PRELUDE]);
  expect([turn('i1').insights, turn('c1').insights]).toEqual([true, false]);
  expect(turn('c2').system_prelude).toBeUndefined();

  expect(insights.replies.map((r) => (r.json as { reply_text: string }).reply_text)).toEqual([
    'Noted: transcript chunk one.',
    'Noted: transcript chunk two.',
  ]);
  // The chat is not an Insights session: its replies are the agent's own words.
  expect((chat.replies[0]!.json as { reply_text: string }).reply_text).toContain('a second sentence\nthat');

  const texts = (task: string) =>
    turn(task)
      .memory.map((m) => m.text)
      .join(' | ');
  expect(texts('i2')).toBe('transcript chunk one | Noted: transcript chunk one.');
  expect(texts('c2')).toContain('chat question one');
  expect(texts('c2')).not.toMatch(/transcript/);
  expect(texts('i2')).not.toMatch(/chat/);
});
