/**
 * The backend relay over real loopback HTTP: a plugin's stream, heartbeat, running and result; a client's
 * create, read and cancel; and bad input on each route answered with a coded 4xx, nothing logged.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { ReasoningEngine } from '../../engine/reasoning/engine.js';
import type { BackendRelayConfig } from '../../adapters/backend/seams.js';
import type { NewIntegration } from '../../engine/reasoning/integrations.js';
import { IntegrationView, ReasoningJob, toBase64Url } from '../../protocol/index.js';
import { heartbeatOf, serveBackend } from '../support/backend.js';
import { SimulatedClock } from '../support/clock.js';
import { request } from '../support/http.js';
import { countBackendEvents } from '../support/log.js';
import { SseConnection } from '../support/sse.js';

interface Running {
  readonly url: string;
  readonly db: string;
  readonly integration: NewIntegration;
  readonly backend: ReasoningEngine;
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

async function startBackend(operatorToken?: string, config?: BackendRelayConfig): Promise<Running> {
  const served = await serveBackend({
    ...(operatorToken === undefined ? {} : { operatorToken }),
    ...(config === undefined ? {} : { config }),
  });
  stops.push(() => served.stop());
  const created = await served.backend.integrations.create('assistant-relay');
  if ('refused' in created) throw new Error(created.refused.message);
  return { url: served.url, db: served.db, integration: created, backend: served.backend };
}

const base = (r: Running, id = r.integration.integration_id) => `${r.url}/api/v1/assistant/integrations/${id}`;
/** `{a: {a: … {}}}`, `depth` levels deep. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 0; i < depth; i += 1) value = { a: value };
  return value;
}
const job = () => ({
  job_id: randomUUID(),
  purpose: 'live_analysis',
  payload: { session_id: 's', transcript: [{ speaker: 'a', text: 'hi' }] },
});
const heartbeat = heartbeatOf();

describe('backend over HTTP: a job end to end', () => {
  it('a client creates a job, the plugin gets it on its stream, runs it, posts its result; the client reads it', async () => {
    const r = await startBackend();
    const { relay_token, client_token } = r.integration;
    const stream = await SseConnection.open(`${base(r)}/stream`, { token: relay_token });
    expect(stream.status).toBe(200);
    expect(await request(`${base(r)}/heartbeat`, { token: relay_token, body: heartbeat })).toMatchObject({
      status: 200,
      body: { ok: true, interval_s: 30 },
    });

    const body = job();
    const created = await request(`${base(r)}/jobs`, { token: client_token, body });
    // With the plugin's stream open it may be on its way already.
    expect(created).toMatchObject({ status: 201, body: { job_id: body.job_id, state: expect.stringMatching(/^(created|delivered)$/) } });
    expect((await request(`${base(r)}/jobs`, { token: client_token, body })).status).toBe(200);

    await stream.until((c) => c.frames.length === 1, 5_000, 'the job frame');
    const [frame] = stream.frames;
    expect(frame!.id).toBe('1');
    expect(ReasoningJob.parse(JSON.parse(frame!.data))).toMatchObject({ job_id: body.job_id, purpose: 'live_analysis' });

    expect(await request(`${base(r)}/jobs/${body.job_id}/running`, { token: relay_token, method: 'POST' })).toMatchObject({ status: 200 });
    const result = { insights: [{ text: 'Ask about the budget.', kind: 'question', confidence: 0.7 }] };
    expect(
      await request(`${base(r)}/jobs/${body.job_id}/result`, { token: relay_token, body: { result: { insights: [{ text: '' }] } } }),
    ).toMatchObject({
      status: 422,
      body: { error: { code: 'result_invalid' } },
    });
    expect((await request(`${base(r)}/jobs/${body.job_id}/result`, { token: relay_token, body: { result } })).status).toBe(200);
    expect((await request(`${base(r)}/jobs/${body.job_id}/result`, { token: relay_token, body: { result } })).status).toBe(200);
    expect(
      await request(`${base(r)}/jobs/${body.job_id}/result`, { token: relay_token, body: { result: { insights: [] } } }),
    ).toMatchObject({
      status: 409,
      body: { error: { code: 'result_conflict' } },
    });
    expect(await request(`${base(r)}/jobs/${body.job_id}`, { token: client_token })).toMatchObject({
      status: 200,
      body: { state: 'completed', result },
    });
    expect(await request(`${base(r)}/jobs/${body.job_id}/cancel`, { token: client_token, method: 'POST' })).toMatchObject({
      status: 409,
      body: { error: { code: 'job_settled' } },
    });
    stream.close();
  });

  it('a client follows a job as it changes, to its end, and resumes from its last frame id', async () => {
    const r = await startBackend();
    const { relay_token, client_token } = r.integration;
    const body = job();
    expect((await request(`${base(r)}/jobs`, { token: client_token, body })).status).toBe(201);
    const events = `${base(r)}/jobs/${body.job_id}/events`;
    const follower = await SseConnection.open(events, { token: client_token });
    expect(follower.status).toBe(200);
    await follower.until((c) => c.frames.length === 1, 5_000, 'the job as it stands');
    const stateOf = (frame: { data: string }) => (JSON.parse(frame.data) as { state: string }).state;
    expect(stateOf(follower.frames[0]!)).toBe('created');

    const stream = await SseConnection.open(`${base(r)}/stream`, { token: relay_token });
    await stream.until((c) => c.frames.length === 1, 5_000, 'the job frame');
    expect((await request(`${base(r)}/jobs/${body.job_id}/running`, { token: relay_token, method: 'POST' })).status).toBe(200);
    const result = { insights: [] };
    expect((await request(`${base(r)}/jobs/${body.job_id}/result`, { token: relay_token, body: { result } })).status).toBe(200);
    await follower.until((c) => c.frames.some((f) => stateOf(f) === 'completed'), 5_000, 'the completed job');
    expect(follower.frames.map(stateOf)).toEqual(['created', 'delivered', 'running', 'completed']);
    expect(follower.frames.map((f) => Number(f.id))).toEqual([1, 2, 3, 4]);
    expect(JSON.parse(follower.frames[3]!.data)).toMatchObject({ state: 'completed', result });
    follower.close();
    stream.close();

    // Behind: the job as it stands now, at once. Up to date: nothing until it changes (it never will).
    const behind = await SseConnection.open(events, { token: client_token, lastEventId: '2' });
    await behind.until((c) => c.frames.length === 1, 5_000, 'the current view');
    expect([behind.frames[0]!.id, stateOf(behind.frames[0]!)]).toEqual(['4', 'completed']);
    behind.close();
    const current = await SseConnection.open(events, { token: client_token, lastEventId: '4' });
    await current.until((c) => c.comments.length >= 1, 5_000, 'the open comment');
    expect(current.frames).toEqual([]);
    current.close();

    // Not this integration's job, or no job: 404; a bad cursor: 400.
    expect((await request(`${base(r)}/jobs/${randomUUID()}/events`, { token: client_token })).status).toBe(404);
    expect(await request(events, { token: client_token, headers: { 'last-event-id': 'x' } })).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_stream_cursor' } },
    });
  });

  it('a client cancels an open job', async () => {
    const r = await startBackend();
    const body = job();
    await request(`${base(r)}/jobs`, { token: r.integration.client_token, body });
    expect(await request(`${base(r)}/jobs/${body.job_id}/cancel`, { token: r.integration.client_token, method: 'POST' })).toMatchObject({
      status: 200,
      body: { state: 'cancelled' },
    });
  });
});

describe('backend over HTTP: what a client reads of its integration', () => {
  const profile = {
    profile_version: 1,
    provider_kind: 'assistant-relay',
    skills: [{ name: 'summarise', description: 'sums up a session' }],
    models: [],
    tools: [],
    limits: { max_concurrent_jobs: 4, max_payload_bytes: 1_000_000 },
    schema_versions: { min: 1, max: 1 },
    envelope_versions: { min: 1, max: 1 },
  };

  it("is unseen before any heartbeat, online with what its plugin said after one, and shows the latest probe's profile", async () => {
    const r = await startBackend();
    const { relay_token, client_token, integration_id } = r.integration;
    const before = await request(base(r), { token: client_token });
    expect(before).toMatchObject({ status: 200, body: { integration_id, provider_kind: 'assistant-relay', state: 'unseen' } });
    expect(before.body).not.toHaveProperty('plugin');
    expect(before.body).not.toHaveProperty('capability_profile');

    expect((await request(`${base(r)}/heartbeat`, { token: relay_token, body: heartbeat })).status).toBe(200);
    expect(await request(base(r), { token: client_token })).toMatchObject({
      status: 200,
      body: {
        state: 'online',
        plugin: { name: heartbeat.plugin.name, status: 'ready', reasoner: heartbeat.reasoner, last_heartbeat_at: expect.any(String) },
      },
    });

    const probe = { job_id: randomUUID(), purpose: 'capability_probe', payload: {} };
    expect((await request(`${base(r)}/jobs`, { token: client_token, body: probe })).status).toBe(201);
    expect((await request(`${base(r)}/jobs/${probe.job_id}/result`, { token: relay_token, body: { result: profile } })).status).toBe(200);
    const after = await request(base(r), { token: client_token });
    expect(after).toMatchObject({
      status: 200,
      body: { capability_profile: profile, capability_probe: { job_id: probe.job_id, completed_at: expect.any(String) } },
    });
    expect(IntegrationView.safeParse(after.body).success).toBe(true);
    // The plugin's token is not the client's.
    expect((await request(base(r), { token: relay_token })).status).toBe(401);
  });
});

describe("backend over HTTP: the operator's admin routes", () => {
  const OPERATOR = 'operator-token-for-tests';
  const admin = (r: Running) => `${r.url}/api/v1/admin/integrations`;

  it('are not there at all when the backend has no operator token', async () => {
    const r = await startBackend();
    expect(await request(admin(r), { token: OPERATOR })).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
  });

  it('create, list, rotate and revoke integrations; the old token stops working at once', async () => {
    const r = await startBackend(OPERATOR);
    const created = await request(admin(r), { token: OPERATOR, body: {} });
    expect(created).toMatchObject({ status: 201, body: { integration_id: expect.any(String), provider_kind: 'assistant-relay' } });
    const fresh = created.body as NewIntegration;
    const own = (token: string) => request(`${r.url}/api/v1/assistant/integrations/${fresh.integration_id}`, { token });
    expect((await own(fresh.client_token)).status).toBe(200);

    const listed = await request(admin(r), { token: OPERATOR });
    expect(listed.status).toBe(200);
    expect((listed.body as { integrations: Array<{ integration_id: string }> }).integrations.map((i) => i.integration_id).sort()).toEqual(
      [r.integration.integration_id, fresh.integration_id].sort(),
    );

    const rotated = await request(`${admin(r)}/${fresh.integration_id}/tokens/client/rotate`, { token: OPERATOR, method: 'POST' });
    expect(rotated).toMatchObject({
      status: 200,
      body: { integration_id: fresh.integration_id, role: 'client', token: expect.any(String) },
    });
    expect((await own(fresh.client_token)).status).toBe(401);
    expect((await own((rotated.body as { token: string }).token)).status).toBe(200);
    // The plugin's token was not touched.
    expect((await request(`${base(r, fresh.integration_id)}/heartbeat`, { token: fresh.relay_token, body: heartbeat })).status).toBe(200);

    // Its plugin's open stream ends the moment it is revoked, not at its next heartbeat.
    const stream = await SseConnection.open(`${base(r, fresh.integration_id)}/stream`, { token: fresh.relay_token });
    expect(stream.status).toBe(200);
    expect(await request(`${admin(r)}/${fresh.integration_id}/revoke`, { token: OPERATOR, method: 'POST' })).toMatchObject({
      status: 200,
      body: { state: 'revoked' },
    });
    await stream.untilEnded(5_000);
    expect((await request(`${base(r, fresh.integration_id)}/heartbeat`, { token: fresh.relay_token, body: heartbeat })).status).toBe(401);
    expect((await own((rotated.body as { token: string }).token)).status).toBe(401);
    expect(await request(`${admin(r)}/${fresh.integration_id}/tokens/relay/rotate`, { token: OPERATOR, method: 'POST' })).toMatchObject({
      status: 409,
      body: { error: { code: 'integration_revoked' } },
    });
    // Revoking again changes nothing.
    const events = await countBackendEvents(r.db);
    expect((await request(`${admin(r)}/${fresh.integration_id}/revoke`, { token: OPERATOR, method: 'POST' })).status).toBe(200);
    expect(await countBackendEvents(r.db)).toBe(events);
  });

  it('refuse a wrong token, a provider that cannot be used, an unknown integration and malformed input, appending nothing', async () => {
    const r = await startBackend(OPERATOR);
    const before = await countBackendEvents(r.db);
    expect(await request(admin(r), { token: r.integration.client_token })).toMatchObject({
      status: 401,
      body: { error: { code: 'unauthorized' } },
    });
    expect(await request(admin(r), { body: {} })).toMatchObject({ status: 401 });
    expect(await request(admin(r), { token: OPERATOR, body: { provider_kind: 'a2a-bridge' } })).toMatchObject({
      status: 422,
      body: { error: { code: 'provider_refused', message: expect.stringMatching(/coming soon/) } },
    });
    expect(await request(admin(r), { token: OPERATOR, body: { provider_kind: 'assistant-relay', extra: 1 } })).toMatchObject({
      status: 400,
    });
    expect(
      await request(admin(r), { token: OPERATOR, rawBody: '{"provider_kind":', headers: { 'content-type': 'application/json' } }),
    ).toMatchObject({ status: 400, body: { error: { code: 'invalid_json' } } });
    expect(await request(`${admin(r)}/${randomUUID()}/revoke`, { token: OPERATOR, method: 'POST' })).toMatchObject({
      status: 404,
      body: { error: { code: 'integration_not_found' } },
    });
    expect(await request(`${admin(r)}/${randomUUID()}/tokens/client/rotate`, { token: OPERATOR, method: 'POST' })).toMatchObject({
      status: 404,
    });
    expect(await request(`${admin(r)}/not-a-uuid/revoke`, { token: OPERATOR, method: 'POST' })).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_integration_id' } },
    });
    expect(
      await request(`${admin(r)}/${r.integration.integration_id}/tokens/operator/rotate`, { token: OPERATOR, method: 'POST' }),
    ).toMatchObject({ status: 400 });
    expect(await countBackendEvents(r.db)).toBe(before);
  });
});

describe('backend over HTTP: bad input gets a coded 4xx and leaves the log untouched', () => {
  it.each([
    { name: 'no token', path: '/jobs', token: undefined, body: job(), status: 401, code: 'unauthorized' },
    { name: 'the relay token on a client route', path: '/jobs', token: 'relay', body: job(), status: 401, code: 'unauthorized' },
    { name: 'the client token on a plugin route', path: '/heartbeat', token: 'client', body: heartbeat, status: 401, code: 'unauthorized' },
    {
      name: 'a job_id that is not a UUID',
      path: '/jobs',
      token: 'client',
      body: { ...job(), job_id: 'nope' },
      status: 400,
      code: 'invalid_request',
    },
    {
      name: 'an unknown purpose',
      path: '/jobs',
      token: 'client',
      body: { ...job(), purpose: 'poetry' },
      status: 400,
      code: 'invalid_request',
    },
    {
      name: 'a response_schema that is no schema',
      path: '/jobs',
      token: 'client',
      body: { ...job(), response_schema: { type: 'nothing' } },
      status: 400,
      code: 'invalid_response_schema',
    },
    {
      name: 'a heartbeat of the wrong shape',
      path: '/heartbeat',
      token: 'relay',
      body: { status: 'fine' },
      status: 400,
      code: 'invalid_request',
    },
    {
      name: 'a result for an unknown job',
      path: `/jobs/${randomUUID()}/result`,
      token: 'relay',
      body: { result: {} },
      status: 404,
      code: 'job_not_found',
    },
    {
      name: 'a result that is neither result nor error',
      path: `/jobs/${randomUUID()}/result`,
      token: 'relay',
      body: { answer: 42 },
      status: 400,
      code: 'invalid_request',
    },
    { name: 'a job path with a bad job_id', path: '/jobs/x/running', token: 'relay', body: undefined, status: 400, code: 'invalid_job_id' },
    {
      name: 'a payload that does not fit its purpose',
      path: '/jobs',
      token: 'client',
      body: { ...job(), payload: { transcript: 'no' } },
      status: 400,
      code: 'invalid_payload',
    },
    {
      name: 'a BYO job whose payload is not an envelope',
      path: '/jobs',
      token: 'client',
      body: { ...job(), byo: true },
      status: 400,
      code: 'invalid_payload',
    },
    {
      name: 'a payload nested past any real one',
      path: '/jobs',
      token: 'client',
      body: { ...job(), payload: nested(1_000) },
      status: 400,
      code: 'invalid_request',
    },
    {
      name: 'a result nested past any real one',
      path: `/jobs/${randomUUID()}/result`,
      token: 'relay',
      body: { result: nested(1_000) },
      status: 400,
      code: 'invalid_request',
    },
    { name: 'malformed JSON', path: '/jobs', token: 'client', raw: '{"job_id":', status: 400, code: 'invalid_json' },
  ] as const)('$name: $status $code', async (row) => {
    const { path, token, status, code } = row;
    const body = 'body' in row ? row.body : undefined;
    const r = await startBackend();
    const before = await countBackendEvents(r.db);
    const bearer = token === 'relay' ? r.integration.relay_token : token === 'client' ? r.integration.client_token : undefined;
    const answer = await request(`${base(r)}${path}`, {
      method: 'POST',
      ...(bearer ? { token: bearer } : {}),
      ...(body === undefined ? {} : { body }),
      ...('raw' in row ? { rawBody: row.raw, headers: { 'content-type': 'application/json' } } : {}),
    });
    expect(answer).toMatchObject({ status, body: { error: { code, message: expect.any(String) } } });
    expect(await countBackendEvents(r.db)).toBe(before);
  });

  it('a bad Last-Event-ID on the job stream is 400 invalid_stream_cursor', async () => {
    const r = await startBackend();
    const answer = await SseConnection.open(`${base(r)}/stream`, { token: r.integration.relay_token, lastEventId: '3:4:5' });
    expect([answer.status, JSON.parse(answer.body).error.code]).toEqual([400, 'invalid_stream_cursor']);
  });

  it("another integration's token is 401", async () => {
    const r = await startBackend();
    const other = await r.backend.integrations.create('assistant-relay');
    if ('refused' in other) throw new Error(other.refused.message);
    expect((await request(`${base(r)}/jobs`, { token: other.client_token, body: job() })).status).toBe(401);
  });

  it('a refused plugin gets no stream and runs nothing (403 plugin_refused), and hears why at each heartbeat', async () => {
    const clock = new SimulatedClock();
    const r = await startBackend(undefined, { clock });
    const { relay_token } = r.integration;
    const answer = await request(`${base(r)}/heartbeat`, {
      token: relay_token,
      body: { ...heartbeat, schema_versions: { min: 2, max: 2 } },
    });
    expect(answer.body).toMatchObject({ refused: { code: 'unsupported_version' } });
    const stream = await SseConnection.open(`${base(r)}/stream`, { token: relay_token });
    expect([stream.status, JSON.parse(stream.body).error.code]).toEqual([403, 'plugin_refused']);
    const body = { ...job(), deadline_ms: 600_000 };
    await request(`${base(r)}/jobs`, { token: r.integration.client_token, body });
    expect(await request(`${base(r)}/jobs/${body.job_id}/running`, { token: relay_token, method: 'POST' })).toMatchObject({
      status: 403,
      body: { error: { code: 'plugin_refused' } },
    });
    // Admitted again at its next heartbeat, an interval later (sooner, its news waits: PROTOCOL.md 6e.20).
    clock.increment(30_000);
    expect((await request(`${base(r)}/heartbeat`, { token: relay_token, body: heartbeat })).status).toBe(200);
    expect((await request(`${base(r)}/jobs/${body.job_id}/running`, { token: relay_token, method: 'POST' })).status).toBe(200);
  });

  it('an invalid result for a job that has ended is 409, not 422', async () => {
    const r = await startBackend();
    const body = job();
    await request(`${base(r)}/jobs`, { token: r.integration.client_token, body });
    await request(`${base(r)}/jobs/${body.job_id}/cancel`, { token: r.integration.client_token, method: 'POST' });
    expect(
      await request(`${base(r)}/jobs/${body.job_id}/result`, { token: r.integration.relay_token, body: { result: { nonsense: true } } }),
    ).toMatchObject({
      status: 409,
      body: { error: { code: 'job_settled' } },
    });
  });

  it('an unknown integration is 401, as a wrong token is: nothing says which integrations exist', async () => {
    const r = await startBackend();
    const answer = await request(`${base(r, randomUUID())}/jobs`, { token: r.integration.client_token, body: job() });
    expect(answer).toMatchObject({ status: 401, body: { error: { code: 'unauthorized' } } });
  });
});

describe('backend over HTTP: key rotation is carried, never judged', () => {
  it("a rotation asked by the client reaches the plugin's stream, its answer reaches the client, each once", async () => {
    const r = await startBackend();
    const { client_token, relay_token } = r.integration;
    const key = (fill: number) => toBase64Url(new Uint8Array(32).fill(fill));
    const request1 = { rekey_id: randomUUID(), kid: 'AAAAAAAAAAAA', client_key: key(1), mac: key(2) };
    const stream = await SseConnection.open(`${base(r)}/stream`, { token: relay_token });
    expect((await request(`${base(r)}/rekeys`, { token: client_token, body: request1 })).status).toBe(201);
    expect((await request(`${base(r)}/rekeys`, { token: client_token, body: request1 })).status).toBe(200);
    expect((await request(`${base(r)}/rekeys`, { token: client_token, body: { ...request1, mac: key(3) } })).body).toMatchObject({
      error: { code: 'rekey_conflict' },
    });
    // The plugin's token cannot ask, the client's cannot answer.
    expect((await request(`${base(r)}/rekeys`, { token: relay_token, body: request1 })).status).toBe(401);
    await stream.until((c) => c.frames.some((f) => f.event === 'rekey'), 5_000, 'the rekey frame');
    expect(JSON.parse(stream.frames.find((f) => f.event === 'rekey')!.data)).toEqual(request1);
    const answer = { assistant_key: key(4), mac: key(5) };
    const at = `${base(r)}/rekeys/${request1.rekey_id}`;
    expect((await request(at, { token: client_token })).body).toMatchObject({ state: 'requested' });
    expect((await request(at, { token: client_token, body: answer })).status).toBe(401);
    expect((await request(at, { token: relay_token, body: answer })).status).toBe(200);
    expect((await request(at, { token: relay_token, body: answer })).status).toBe(200);
    expect((await request(at, { token: relay_token, body: { ...answer, mac: key(6) } })).body).toMatchObject({
      error: { code: 'rekey_conflict' },
    });
    expect((await request(at, { token: client_token })).body).toEqual({ ...request1, state: 'answered', answer });
    expect((await request(`${base(r)}/rekeys/${randomUUID()}`, { token: relay_token, body: answer })).body).toMatchObject({
      error: { code: 'rekey_not_found' },
    });
    // Answered, it is not sent again on a new stream; a new request is, to the stream open at the time.
    stream.close();
    const next = await SseConnection.open(`${base(r)}/stream`, { token: relay_token });
    const request2 = { ...request1, rekey_id: randomUUID() };
    expect((await request(`${base(r)}/rekeys`, { token: client_token, body: request2 })).status).toBe(201);
    await next.until((c) => c.frames.some((f) => f.event === 'rekey'), 5_000, 'the second rekey frame');
    expect(next.frames.filter((f) => f.event === 'rekey').map((f) => JSON.parse(f.data).rekey_id)).toEqual([request2.rekey_id]);
    next.close();
  });
});
