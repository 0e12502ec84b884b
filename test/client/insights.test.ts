/**
 * Insights from the client's side (4.4) against the real host: the recording holds its `insights:`
 * stream for its life (rule 4), sends the system_prelude once, puts replies in its own store (never a
 * chat's), and drops `none` and `silent`.
 */
import { afterEach, expect, it } from 'vitest';
import { FormAClient } from '../../adapters/client/form-a.js';
import { InsightsRecording } from '../../adapters/client/insights.js';
import { insightsAgent, scriptAgent } from '../../adapters/agents/index.js';
import { builtinReasoner } from '../../adapters/reasoners/index.js';
import { TOKEN, startHost, readEvents } from '../support/host.js';
import { script } from '../support/http.js';
import { waitFor } from '../support/wait.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('a recording holds its insights stream, sends the prelude once, keeps its insights apart and drops none', async () => {
  const host = await startHost();
  cleanups.push(() => host.cleanup());
  const streams: Array<[string, string]> = [];
  const client = new FormAClient({ url: host.url, token: TOKEN, onStream: (session, state) => streams.push([session, state]) });
  cleanups.push(() => client.close());
  const recording = await InsightsRecording.start(
    client,
    'call-1',
    'Sales call; playbook: discovery. Answer with one short sentence, or none.',
  );
  for (const line of [
    script({ message: 'Ask who owns the budget. Then more.' }),
    script({ message: 'none' }),
    script({ silent: true }),
    script({ message: 'They mentioned a deadline.' }),
  ])
    recording.line(line);
  await waitFor('every line answered', () => recording.store.getSnapshot().context.pending === 0);
  expect(recording.store.getSnapshot().context.insights.map((i) => i.text)).toEqual([
    'Ask who owns the budget.',
    'They mentioned a deadline.',
  ]);
  // Nothing pending, and the stream is still open: the recording owns it.
  expect(client.subscription('insights:call-1')?.value).toBe('open');
  await recording.stop();
  expect(client.subscription('insights:call-1')).toBeUndefined();
  expect(streams.filter(([, state]) => state === 'open')).toEqual([['insights:call-1', 'open']]);
  // The prelude went with one line only (the first sent; the four go out at once, so the host may log them in any order).
  const started = readEvents(host.db).filter((e) => e.type === 'task.started');
  expect([started.length, started.filter((e) => e.system_prelude !== undefined).length]).toEqual([4, 1]);
});

it('the insights agent answers an insights: session through a reasoner, and leaves the chat to the chat agent', async () => {
  const host = await startHost({ agent: insightsAgent(builtinReasoner({ providerKind: 'assistant-relay' }), scriptAgent) });
  cleanups.push(() => host.cleanup());
  const client = new FormAClient({ url: host.url, token: TOKEN });
  cleanups.push(() => client.close());
  const recording = await InsightsRecording.start(client, 'call-2', 'A sales call.');
  for (const line of [
    'Ana: Thanks for joining.',
    'Ben: We are worried the rollout will be delayed.',
    'Ana: What is the budget for this quarter?',
  ])
    recording.line(line);
  await recording.stop();
  const insights = recording.store.getSnapshot().context.insights.map((i) => i.text);
  expect(insights.length).toBeGreaterThan(0);
  for (const text of insights) expect(text).not.toMatch(/\.\s+\S/);
  // Each insight is news: an analysis of the whole call does not surface the same one twice.
  expect(new Set(insights).size).toBe(insights.length);
  // The chat session of the same call is the chat agent's.
  const chat = await client.send('call-2', script({ message: 'chat reply' })).reply;
  expect(chat).toMatchObject({ status: 'message', reply_text: 'chat reply' });
});
