import { describe, expect, it } from 'vitest';
import { asInsight, insightsSentence } from '../../machines/chat/insights.js';

describe('insightsSentence: one short sentence (4.4 rule 3)', () => {
  it.each([
    ['The customer asked about pricing.', 'The customer asked about pricing.'],
    ['Ask about the budget. Then mention the discount!', 'Ask about the budget.'],
    ['Really? They said no twice.', 'Really?'],
    ['  line one\nline two  ', 'line one line two'],
    ['Version 2.5 ships today. More later.', 'Version 2.5 ships today.'],
    ['none', 'none'],
    ['', 'none'],
    [' \n\t ', 'none'],
    ['No terminator at all', 'No terminator at all'],
  ])('%j -> %j', (text, expected) => {
    expect(insightsSentence(text)).toBe(expected);
  });

  it('a sentence over the cap is cut at a word and ends with an ellipsis', () => {
    const text = `${'word '.repeat(60)}end.`;
    const cut = insightsSentence(text, 40);
    expect(cut.length).toBeLessThanOrEqual(40);
    expect(cut).toBe(`${'word '.repeat(7).trimEnd()}…`);
  });

  it('only a message is reshaped; typing and errored pass unchanged', () => {
    const typing = { session_id: 'insights:c', task_id: 't', status: 'typing', label: 'a. b. c.' } as const;
    expect(asInsight(typing)).toBe(typing);
    expect(
      asInsight({ session_id: 'insights:c', task_id: 't', status: 'message', message_id: 'm', reply_text: 'One. Two.' }),
    ).toMatchObject({
      reply_text: 'One.',
    });
  });
});
