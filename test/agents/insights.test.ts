/**
 * The live insights `npm start` shows for the bundled call (samples/sales-call.txt), exactly: each line goes
 * to the insights agent over the builtin reasoner as the host hands it one (the earlier lines and replies in
 * memory, the reply cut to one sentence as the host cuts it), and the insight it answers is held here.
 * What they must get right (issue 24): a greeting is no question, an answered question is no open one, a
 * question about a delay is no concern, and a quote cut to fit is cut at a word and closed.
 */
import { describe, expect, it } from 'vitest';
import { insightsAgent } from '../../adapters/agents/index.js';
import { builtinReasoner } from '../../adapters/reasoners/index.js';
import type { Agent, MemoryEntry, ReplySink, Turn } from '../../engine/chat/agent.js';
import { insightsSentence } from '../../machines/chat/insights.js';
import { SALES_CALL, SALES_CALL_INSIGHTS } from '../support/sales-call.js';

const chat: Agent = { name: 'chat', respond: async () => expect.fail('an insights: line went to the chat agent') };
const agent = insightsAgent(builtinReasoner({ providerKind: 'assistant-relay' }), chat);

/** Plays `lines` into one insights: session, each answered before the next, as the demo's pace allows; each reply as the host keeps it. */
async function play(lines: readonly string[]): Promise<string[]> {
  const memory: MemoryEntry[] = [];
  const replies: string[] = [];
  for (const [i, text] of lines.entries()) {
    let said = 'none';
    const sink = {
      message: async (reply: string) => void (said = insightsSentence(reply)),
      signal: new AbortController().signal,
    } as ReplySink;
    const turn: Turn = {
      session_id: 'insights:call-1',
      task_id: `t${i}`,
      text,
      system_prelude: 'A sales call.',
      memory: [...memory],
      insights: true,
    };
    await agent.respond(turn, sink);
    memory.push({ role: 'user', text, task_id: turn.task_id, at: i }, { role: 'assistant', text: said, task_id: turn.task_id, at: i });
    replies.push(said);
  }
  return replies;
}

/** `line number: insight`, for the lines that got one. */
const shown = (replies: readonly string[]) => replies.flatMap((reply, i) => (reply === 'none' ? [] : [`${i + 1}: ${reply}`]));

describe('the live insights of the bundled call', () => {
  it('are these, line by line', async () => {
    expect(shown(await play(SALES_CALL))).toEqual(SALES_CALL_INSIGHTS);
  });

  it('flag a question only once its asker speaks again unanswered, and never one that was answered', async () => {
    expect(
      shown(
        await play(['Ana: Thanks for coming, Ben. Is the budget approved?', 'Ben: Not yet.', 'Ana: Who signs it off?', 'Ana: I can wait.']),
      ),
    ).toEqual(['4: Ana\'s question went unanswered: "Who signs it off?"']);
  });

  it('quote a sentence too long to fit cut at a word, with an ellipsis, the quote closed', async () => {
    const long = `Ben: I am worried that ${'the integration with the ticketing system '.repeat(6)}will slip.`;
    const [reply] = await play([long]);
    expect(reply).toMatch(/^Ben raised a concern: "I am worried that the integration .* the\w*…"$/);
    expect(reply!.length).toBeLessThanOrEqual(200);
    expect(reply).toBe(insightsSentence(reply!));
  });
});
