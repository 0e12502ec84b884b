import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { builtinReasoner } from '../../adapters/reasoners/index.js';
import { transcriptLine } from '../../protocol/index.js';
import { CALL, failureOf, job } from './job.js';

const reasoner = builtinReasoner({ providerKind: 'assistant-relay' });
const schemaFile = (name: string) =>
  JSON.parse(readFileSync(fileURLToPath(new URL(`../../schemas/purposes/${name}.json`, import.meta.url)), 'utf8')) as object;
const ajv = new Ajv2020({ strict: false });

describe('the builtin reasoner', () => {
  it.each(['live_analysis', 'session_summary', 'capability_probe'] as const)(
    'answers %s with a result its shipped schema accepts, the same for the same payload',
    async (purpose) => {
      const payload = purpose === 'capability_probe' ? {} : CALL;
      const result = await reasoner.reason(job(purpose, payload));
      expect(ajv.validate(schemaFile(`${purpose}.result`), result), ajv.errorsText()).toBe(true);
      expect(await reasoner.reason(job(purpose, structuredClone(payload)))).toEqual(result);
    },
  );

  it("draws insights from the transcript's newest line: its worry, its figure; the question still has its answer to come", async () => {
    const { insights } = (await reasoner.reason(job('live_analysis', CALL))) as { insights: Array<{ kind: string; text: string }> };
    expect(insights).toEqual([]);
    const worried = { ...CALL, transcript: CALL.transcript.slice(0, 2) };
    expect(((await reasoner.reason(job('live_analysis', worried))) as { insights: unknown[] }).insights).toEqual([
      { kind: 'risk', text: 'Ben raised a concern: "I am worried the rollout is delayed again."', confidence: 0.8 },
    ]);
    const first = { ...CALL, transcript: CALL.transcript.slice(0, 1) };
    expect(((await reasoner.reason(job('live_analysis', first))) as { insights: unknown[] }).insights).toEqual([
      { kind: 'fact', text: 'Ana mentioned a figure: "We have 3 items today."', confidence: 0.5 },
    ]);
  });

  it('suggests inviting others in when one speaker has said most of a call, once there is a call to judge', async () => {
    const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(' ');
    const talk = (n: number) => ({
      session_id: 's',
      transcript: [
        { speaker: 'Ana', text: words(n) },
        { speaker: 'Ben', text: 'ok' },
      ],
    });
    expect(await reasoner.reason(job('live_analysis', talk(120)))).toEqual({
      insights: [{ kind: 'suggestion', text: 'Ana has said over 60% of the words so far: invite the others in.', confidence: 0.4 }],
    });
    expect(await reasoner.reason(job('live_analysis', talk(7)))).toEqual({ insights: [] });
  });

  it('summarises a call: who spoke, the questions, the concerns and figures; action items with owners, decisions', async () => {
    const summary = await reasoner.reason(job('session_summary', { ...CALL, notes: 'Beta on Friday.' }));
    expect(summary).toEqual({
      summary:
        'Ana and Ben spoke in 4 turns. Ben asked 1 question; 1 went unanswered: "Can we move the review to Monday?" (Ben). ' +
        'Concerns: "I am worried the rollout is delayed again." (Ben). Figures and dates: "We have 3 items today." (Ana). Notes: Beta on Friday.',
      action_items: [{ text: "I'll send the release notes.", owner: 'Ana' }],
      decisions: ['We decided to ship the beta on Friday.'],
    });
  });

  it('keeps an offer the other side takes up as an action item, and a question answered as answered', async () => {
    const call = {
      session_id: 's',
      transcript: [
        { speaker: 'Ana', text: 'Who owns the budget?' },
        { speaker: 'Ben', text: 'Finance does.' },
        { speaker: 'Ana', text: 'We can send the security documents today.' },
        { speaker: 'Ben', text: 'Please do.' },
      ],
    };
    expect(await reasoner.reason(job('session_summary', call))).toMatchObject({
      summary: 'Ana and Ben spoke in 4 turns. Ana asked 1 question; it was answered.',
      action_items: [{ text: 'We can send the security documents today.', owner: 'Ana' }],
      decisions: [],
    });
  });

  it('summarises the bundled call (samples/sales-call.txt) as a person would, from what was said', async () => {
    const lines = readFileSync(fileURLToPath(new URL('../../samples/sales-call.txt', import.meta.url)), 'utf8')
      .split('\n')
      .filter(Boolean);
    const summary = await reasoner.reason(job('session_summary', { session_id: 'call', transcript: lines.map(transcriptLine) }));
    expect(summary).toEqual({
      summary: [
        'Maya and Daniel spoke in 26 turns. Maya asked 9 questions; each was answered. Most mentioned: agents, pilot, tickets, security.',
        'Concerns: "There is some budget, but I am worried it will be cut if the rollout is delayed again." (Daniel);',
        '"The integration with our ticketing system took two months longer than planned." (Daniel);',
        '"Our security team has to approve any tool that reads customer tickets." (Daniel).',
        'Figures and dates: "We are rolling out the new field app to four regions, and support tickets are piling up." (Daniel);',
        '"Twelve agents, around three thousand tickets a week, more since the rollout started." (Daniel);',
        '"Priya runs support operations, and finance signs off on anything over fifty thousand." (Daniel);',
        '"Response times under four hours, and agents not burning out." (Daniel); "The board review is at the end of next month." (Daniel);',
        '"Then let\'s aim for a pilot with two agents before the review." (Maya).',
      ].join(' '),
      action_items: [
        { text: 'Our integration usually takes a week, and we can show you a customer on the same ticketing system.', owner: 'Maya' },
        { text: 'I will send you a pilot plan and a reference call by Friday.', owner: 'Maya' },
        { text: 'I will set up a meeting with Priya next week.', owner: 'Daniel' },
        { text: 'We can send our security documents today so they can start early.', owner: 'Maya' },
      ],
      decisions: [
        'We agreed internally to pilot one tool this quarter, so that fits.',
        "Let's go with a two-week pilot if security signs off.",
      ],
    });
  });

  it('answers a capability probe with its skills and the provider_kind it was given', async () => {
    const profile = await builtinReasoner({ providerKind: 'kind-x', limits: { max_concurrent_jobs: 8, max_payload_bytes: 1000 } }).reason(
      job('capability_probe', {}),
    );
    expect(profile).toMatchObject({
      provider_kind: 'kind-x',
      skills: [{ name: 'live_analysis' }, { name: 'session_summary' }],
      models: [],
      limits: { max_concurrent_jobs: 8, max_payload_bytes: 1000 },
      schema_versions: { min: 1, max: 1 },
    });
  });

  it('refuses a payload that does not follow its purpose: invalid_payload', async () => {
    expect(await failureOf(reasoner.reason(job('live_analysis', { session_id: 's', transcript: [] })))).toMatchObject({
      name: 'ReasonerError',
      code: 'invalid_payload',
      message: expect.stringContaining('transcript'),
    });
    expect((await failureOf(reasoner.reason(job('capability_probe', { extra: 1 })))).code).toBe('invalid_payload');
  });

  it("fails invalid_result when the job's own response_schema wants something else", async () => {
    const response_schema = { type: 'object', required: ['verdict'] };
    expect(await failureOf(reasoner.reason(job('session_summary', CALL, { response_schema })))).toMatchObject({
      code: 'invalid_result',
      message: expect.stringContaining("must have required property 'verdict'"),
    });
  });

  it('fails invalid_response_schema on a schema that does not compile', async () => {
    expect((await failureOf(reasoner.reason(job('session_summary', CALL, { response_schema: { type: 'nonsense' } })))).code).toBe(
      'invalid_response_schema',
    );
  });

  it('does not start a job whose deadline has passed, nor one the plugin stopped', async () => {
    expect((await failureOf(reasoner.reason(job('live_analysis', CALL, { deadlineMs: -1 })))).code).toBe('deadline_exceeded');
    expect((await failureOf(reasoner.reason(job('live_analysis', CALL, { signal: AbortSignal.abort() })))).code).toBe('interrupted');
  });
});
