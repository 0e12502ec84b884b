import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { builtinReasoner } from '../../adapters/reasoners/index.js';
import { CALL, failureOf, job } from './job.js';

const reasoner = builtinReasoner({ providerKind: 'assistant-relay' });
const schemaFile = (name: string) => JSON.parse(readFileSync(fileURLToPath(new URL(`../../schemas/purposes/${name}.json`, import.meta.url)), 'utf8')) as object;
const ajv = new Ajv2020({ strict: false });

describe('the builtin reasoner', () => {
  it.each(['live_analysis', 'session_summary', 'capability_probe'] as const)('answers %s with a result its shipped schema accepts, the same for the same payload', async (purpose) => {
    const payload = purpose === 'capability_probe' ? {} : CALL;
    const result = await reasoner.reason(job(purpose, payload));
    expect(ajv.validate(schemaFile(`${purpose}.result`), result), ajv.errorsText()).toBe(true);
    expect(await reasoner.reason(job(purpose, structuredClone(payload)))).toEqual(result);
  });

  it('draws insights from the transcript: the worry, the open question, the figure', async () => {
    const { insights } = (await reasoner.reason(job('live_analysis', CALL))) as { insights: Array<{ kind: string; text: string }> };
    expect(insights.map((i) => i.kind)).toEqual(['risk', 'question', 'fact']);
    expect(insights[0]!.text).toContain('rollout is delayed');
    expect(insights[1]!.text).toContain('review to Monday?');
    expect(insights[2]!.text).toContain('3 items');
  });

  it('suggests inviting others in when one speaker dominates, and says nothing of a quiet line', async () => {
    const talk = { session_id: 's', transcript: [{ speaker: 'Ana', text: 'one two three four five six seven' }, { speaker: 'Ben', text: 'ok' }] };
    const { insights } = (await reasoner.reason(job('live_analysis', talk))) as { insights: Array<{ kind: string; text: string }> };
    expect(insights).toEqual([{ kind: 'suggestion', text: 'Ana has said 88% of the words so far: invite the others in.', confidence: 0.4 }]);
  });

  it('summarises a call: who spoke, action items with owners, decisions', async () => {
    const summary = await reasoner.reason(job('session_summary', { ...CALL, notes: 'Beta on Friday.' }));
    expect(summary).toMatchObject({
      action_items: [{ text: "We decided to ship the beta on Friday. I'll send the release notes.", owner: 'Ana' }],
      decisions: ["We decided to ship the beta on Friday. I'll send the release notes."],
    });
    expect(summary.summary).toMatch(/^4 utterances from Ana, Ben\. It began with Ana: "Thanks.*Notes: Beta on Friday\.$/);
  });

  it('answers a capability probe with its skills and the provider_kind it was given', async () => {
    const profile = await builtinReasoner({ providerKind: 'kind-x', limits: { max_concurrent_jobs: 8, max_payload_bytes: 1000 } }).reason(job('capability_probe', {}));
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
    expect((await failureOf(reasoner.reason(job('session_summary', CALL, { response_schema: { type: 'nonsense' } })))).code).toBe('invalid_response_schema');
  });

  it('does not start a job whose deadline has passed, nor one the plugin stopped', async () => {
    expect((await failureOf(reasoner.reason(job('live_analysis', CALL, { deadlineMs: -1 })))).code).toBe('deadline_exceeded');
    expect((await failureOf(reasoner.reason(job('live_analysis', CALL, { signal: AbortSignal.abort() })))).code).toBe('interrupted');
  });
});
