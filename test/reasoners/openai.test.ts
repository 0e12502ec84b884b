import { afterEach, describe, expect, it } from 'vitest';
import { openAiReasoner, type OpenAiReasonerOptions } from '../../adapters/reasoners/openai.js';
import { closeReceivers, closedPort } from '../support/receiver.js';
import { chatServer, type ChatReply } from './chat-server.js';
import { CALL, failureOf, job } from './job.js';

afterEach(closeReceivers);

const GOOD = { insights: [{ text: 'Ask why the rollout slipped.', kind: 'question', confidence: 0.7 }] };
const BAD = { insights: [{ text: '', kind: 'shout', confidence: 2 }] };
const KEY = 'sk-test-0123456789';

async function setup(replies: ChatReply[], options: Partial<OpenAiReasonerOptions> = {}) {
  const server = await chatServer(replies);
  const reasoner = openAiReasoner({ baseUrl: server.baseUrl, model: 'llama3.2', apiKey: KEY, providerKind: 'assistant-relay', ...options });
  return { server, reasoner };
}

describe('the openai reasoner', () => {
  it('asks {base_url}/chat/completions for structured output with the job’s schema, and returns a plain answer', async () => {
    const { server, reasoner } = await setup([{ content: JSON.stringify(GOOD) }]);
    const request = job('live_analysis', CALL);
    expect(await reasoner.reason(request)).toEqual(GOOD);
    const [received] = server.receiver.requests;
    expect(received!.method).toBe('POST');
    expect(received!.url).toBe('/v1/chat/completions');
    expect(received!.headers.authorization).toBe(`Bearer ${KEY}`);
    const [body] = server.bodies();
    const { $schema, ...schema } = request.response_schema;
    expect($schema).toBeDefined();
    expect(body).toMatchObject({ model: 'llama3.2', stream: false });
    expect(body!.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'live_analysis', schema, strict: false } });
    expect(body!.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user']);
    expect(body!.messages[0].content).toContain(JSON.stringify(request.response_schema));
    expect(JSON.parse(body!.messages[1].content)).toEqual(CALL);
    expect(received!.body).not.toContain(KEY);
  });

  it('reads a streamed answer (stream: true, data: chunks, [DONE])', async () => {
    const { server, reasoner } = await setup([{ content: JSON.stringify(GOOD), stream: true }], { stream: true });
    expect(await reasoner.reason(job('live_analysis', CALL))).toEqual(GOOD);
    expect(server.bodies()[0]).toMatchObject({ stream: true });
    expect(server.receiver.requests[0]!.headers.accept).toBe('text/event-stream');
  });

  it('asks once more, with what was wrong, when the answer does not follow the schema', async () => {
    const { server, reasoner } = await setup([{ content: JSON.stringify(BAD) }, { content: JSON.stringify(GOOD) }]);
    expect(await reasoner.reason(job('live_analysis', CALL))).toEqual(GOOD);
    const second = server.bodies()[1]!;
    expect(second.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(second.messages[2].content).toBe(JSON.stringify(BAD));
    // Ajv's account stops at the first problem: a hostile result's every problem would be megabytes.
    expect(second.messages[3].content).toMatch(
      /does not follow the schema: result\/insights\/0\/text must NOT have fewer than 1 characters\./,
    );
  });

  it('takes an answer inside a Markdown code fence, and asks again after one that is not JSON', async () => {
    const { server, reasoner } = await setup([{ content: 'Sure! Here it is.' }, { content: '```json\n' + JSON.stringify(GOOD) + '\n```' }]);
    expect(await reasoner.reason(job('live_analysis', CALL))).toEqual(GOOD);
    expect(server.bodies()[1]!.messages[3].content).toContain('the answer is not JSON');
  });

  it('fails invalid_result when the answer does not conform twice, after exactly two requests', async () => {
    const { server, reasoner } = await setup([{ content: JSON.stringify(BAD) }]);
    expect(await failureOf(reasoner.reason(job('live_analysis', CALL)))).toMatchObject({
      name: 'ReasonerError',
      code: 'invalid_result',
      message: expect.stringContaining('twice'),
    });
    expect(server.receiver.requests).toHaveLength(2);
  });

  it('fails reasoner_refused when the model declines, without asking again', async () => {
    const { server, reasoner } = await setup([{ refusal: 'I cannot help with that.' }]);
    expect(await failureOf(reasoner.reason(job('live_analysis', CALL)))).toMatchObject({
      code: 'reasoner_refused',
      message: 'the model declined: I cannot help with that.',
    });
    expect(server.receiver.requests).toHaveLength(1);
  });

  it.each([429, 503])('waits out a %i whose Retry-After ends before the deadline, then asks again', async (status) => {
    const { server, reasoner } = await setup([
      { status, headers: { 'retry-after': '1' }, body: '{"error":{"message":"slow down"}}' },
      { content: JSON.stringify(GOOD) },
    ]);
    expect(await reasoner.reason(job('live_analysis', CALL))).toEqual(GOOD);
    expect(server.receiver.requests).toHaveLength(2);
  });

  it('fails reasoner_unavailable at once on a 429 whose Retry-After is past the deadline, or that has none', async () => {
    const late = await setup([{ status: 429, headers: { 'retry-after': '60' }, body: '{"error":{"message":"slow down"}}' }]);
    expect(await failureOf(late.reasoner.reason(job('live_analysis', CALL, { deadlineMs: 5_000 })))).toMatchObject({
      code: 'reasoner_unavailable',
      message: "the chat server answered 429 Retry-After 60 s, past the job's deadline: slow down",
    });
    expect(late.server.receiver.requests).toHaveLength(1);
    const bare = await setup([{ status: 429 }]);
    expect((await failureOf(bare.reasoner.reason(job('live_analysis', CALL)))).message).toContain('429 without Retry-After');
  });

  it('fails reasoner_unavailable on a 500, with the server’s message, without asking again', async () => {
    const { server, reasoner } = await setup([{ status: 500, body: '{"error":{"message":"model crashed"}}' }]);
    expect(await failureOf(reasoner.reason(job('live_analysis', CALL)))).toMatchObject({
      code: 'reasoner_unavailable',
      message: 'the chat server answered 500: model crashed',
    });
    expect(server.receiver.requests).toHaveLength(1);
  });

  it('fails reasoner_error on a 4xx, and follows no redirect', async () => {
    const bad = await setup([{ status: 400, body: '{"error":{"message":"unknown model"}}' }]);
    expect(await failureOf(bad.reasoner.reason(job('live_analysis', CALL)))).toMatchObject({
      code: 'reasoner_error',
      message: 'the chat server answered 400: unknown model',
    });
    const moved = await setup([{ status: 307, headers: { location: 'http://127.0.0.2:9/v1/chat/completions' } }]);
    expect((await failureOf(moved.reasoner.reason(job('live_analysis', CALL)))).code).toBe('reasoner_error');
    expect(moved.server.receiver.requests).toHaveLength(1);
  });

  it('fails reasoner_unavailable when nothing listens at the base URL', async () => {
    const reasoner = openAiReasoner({ baseUrl: `http://127.0.0.1:${await closedPort()}/v1`, model: 'm', providerKind: 'assistant-relay' });
    expect(await failureOf(reasoner.reason(job('live_analysis', CALL)))).toMatchObject({
      code: 'reasoner_unavailable',
      message: expect.stringContaining('ECONNREFUSED'),
    });
  });

  it('aborts a request that hangs past the deadline: deadline_exceeded, the connection closed', async () => {
    const { server, reasoner } = await setup([{ hang: true }]);
    expect(await failureOf(reasoner.reason(job('live_analysis', CALL, { deadlineMs: 300 })))).toMatchObject({ code: 'deadline_exceeded' });
    await server.hangClosed;
  });

  it('stops when the plugin stops before the deadline: interrupted', async () => {
    const { server, reasoner } = await setup([{ hang: true }]);
    const stop = new AbortController();
    const running = reasoner.reason(job('live_analysis', CALL, { signal: stop.signal }));
    await server.receiver.received();
    stop.abort();
    expect((await failureOf(running)).code).toBe('interrupted');
    await server.hangClosed;
  });

  it('does not ask anything for a job whose deadline has passed', async () => {
    const { server, reasoner } = await setup([{ content: JSON.stringify(GOOD) }]);
    expect((await failureOf(reasoner.reason(job('live_analysis', CALL, { deadlineMs: -1 })))).code).toBe('deadline_exceeded');
    expect(server.receiver.requests).toHaveLength(0);
  });

  it('answers a capability probe from its configuration, naming its model, without asking the server', async () => {
    const { server, reasoner } = await setup([{ status: 500 }]);
    expect(await reasoner.reason(job('capability_probe', {}))).toMatchObject({
      provider_kind: 'assistant-relay',
      models: [{ id: 'llama3.2' }],
    });
    expect(server.receiver.requests).toHaveLength(0);
  });
});
