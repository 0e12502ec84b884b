/**
 * Job ids are each integration's own (issue 23 part 3, PROTOCOL.md 6.7), over real loopback HTTP: a
 * tenant that creates a job with another's `job_id` gets a job of its own, and learns nothing of the
 * other's: every route answers it as for an id no job has, and nothing of the other's job moves.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { NewIntegration } from '../../engine/reasoning/integrations.js';
import { ReasoningJob } from '../../protocol/index.js';
import { heartbeatOf, serveBackend, type ServedBackend } from '../support/backend.js';
import { request, type JsonResponse } from '../support/http.js';
import { countBackendEvents } from '../support/log.js';
import { SseConnection } from '../support/sse.js';

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

interface Tenant {
  readonly integration: NewIntegration;
  readonly base: string;
  /** Its plugin's job stream. */
  readonly stream: SseConnection;
}

async function tenantOf(served: ServedBackend): Promise<Tenant> {
  const integration = await served.backend.integrations.create('assistant-relay');
  if ('refused' in integration) throw new Error(integration.refused.message);
  const base = `${served.url}/api/v1/assistant/integrations/${integration.integration_id}`;
  const stream = await SseConnection.open(`${base}/stream`, { token: integration.relay_token });
  stops.push(async () => stream.close());
  expect(stream.status).toBe(200);
  expect((await request(`${base}/heartbeat`, { token: integration.relay_token, body: heartbeatOf() })).status).toBe(200);
  return { integration, base, stream };
}

/** A backend with two tenants, C and D, each with its plugin's stream open. */
async function twoTenants(): Promise<{ served: ServedBackend; c: Tenant; d: Tenant }> {
  const served = await serveBackend();
  stops.push(() => served.stop());
  return { served, c: await tenantOf(served), d: await tenantOf(served) };
}

const transcript = (text: string) => ({ session_id: 's', transcript: [{ speaker: 'a', text }] });
const resultOf = (text: string) => ({ insights: [{ text, kind: 'fact', confidence: 0.5 }] });

/** Everything a tenant can ask of a job by its id, with both its tokens: what a probe for another's job would try. */
async function everyAsk(tenant: Tenant, jobId: string): Promise<Array<Pick<JsonResponse, 'status' | 'body'>>> {
  const { relay_token, client_token } = tenant.integration;
  const follow = await SseConnection.open(`${tenant.base}/jobs/${jobId}/events`, { token: client_token });
  follow.close();
  const answers = [
    await request(`${tenant.base}/jobs/${jobId}`, { token: client_token }),
    { status: follow.status, body: JSON.parse(follow.body) as unknown },
    await request(`${tenant.base}/jobs/${jobId}/cancel`, { token: client_token, method: 'POST' }),
    await request(`${tenant.base}/jobs/${jobId}/running`, { token: relay_token, method: 'POST' }),
    await request(`${tenant.base}/jobs/${jobId}/result`, { token: relay_token, body: { result: resultOf('forged') } }),
    await request(`${tenant.base}/jobs/${jobId}/result`, {
      token: relay_token,
      body: { error: { code: 'reasoner_error', message: 'forged' } },
    }),
  ];
  return answers.map(({ status, body }) => ({ status, body }));
}

/** The job frames a plugin's stream carried, as envelopes. */
const jobsOn = (stream: SseConnection) =>
  stream.frames.filter((frame) => frame.id !== undefined).map((frame) => ReasoningJob.parse(JSON.parse(frame.data)));

describe("a job_id is its integration's own", () => {
  it("another tenant creating a job with C's job_id gets its own job; both run and complete on their own, and D never reaches C's", async () => {
    const { served, c, d } = await twoTenants();
    const job_id = randomUUID();
    expect(
      (
        await request(`${c.base}/jobs`, {
          token: c.integration.client_token,
          body: { job_id, purpose: 'live_analysis', payload: transcript('C asks') },
        })
      ).status,
    ).toBe(201);
    await c.stream.until((s) => jobsOn(s).length === 1, 5_000, "C's job frame");
    const cBefore = await request(`${c.base}/jobs/${job_id}`, { token: c.integration.client_token });
    expect(cBefore).toMatchObject({ status: 200, body: { state: 'delivered', deliveries: 1 } });
    const events = await countBackendEvents(served.db);

    // D probes for C's job by its id with every route it has: each answer is the one an unknown id gets, and nothing is logged.
    const unknown = await everyAsk(d, randomUUID());
    expect(unknown.map(({ status, body }) => [status, (body as { error: { code: string } }).error.code])).toEqual(
      Array(6).fill([404, 'job_not_found']),
    );
    expect(await everyAsk(d, job_id)).toEqual(unknown);
    expect(await countBackendEvents(served.db)).toBe(events);
    expect(await request(`${c.base}/jobs/${job_id}`, { token: c.integration.client_token })).toMatchObject({
      status: 200,
      body: cBefore.body,
    });

    // D creates a job with C's id and other content: a new job of its own (201), not a conflict with C's.
    const dCreated = await request(`${d.base}/jobs`, {
      token: d.integration.client_token,
      body: { job_id, purpose: 'live_analysis', payload: transcript('D asks') },
    });
    expect(dCreated).toMatchObject({
      status: 201,
      body: { job_id, integration_id: d.integration.integration_id, state: expect.stringMatching(/^(created|delivered)$/) },
    });
    await d.stream.until((s) => jobsOn(s).length === 1, 5_000, "D's job frame");
    // Each plugin is sent its own job, with its own payload, under its own stream's frame ids.
    expect(jobsOn(c.stream).map((job) => [job.job_id, job.payload])).toEqual([[job_id, transcript('C asks')]]);
    expect(jobsOn(d.stream).map((job) => [job.job_id, job.payload])).toEqual([[job_id, transcript('D asks')]]);
    expect([c.stream.lastId, d.stream.lastId]).toEqual(['1', '1']);
    // C's job is as it was.
    expect(await request(`${c.base}/jobs/${job_id}`, { token: c.integration.client_token })).toMatchObject({
      status: 200,
      body: cBefore.body,
    });

    // Each follows its own job.
    const cFollow = await SseConnection.open(`${c.base}/jobs/${job_id}/events`, { token: c.integration.client_token });
    const dFollow = await SseConnection.open(`${d.base}/jobs/${job_id}/events`, { token: d.integration.client_token });
    stops.push(async () => {
      cFollow.close();
      dFollow.close();
    });
    const finalOf = (follow: SseConnection) => follow.replies.map(({ json }) => json).find((view) => view.state === 'completed');

    // D's plugin runs and completes its job first; C's is untouched by it.
    for (const path of ['running', 'result']) {
      const body = path === 'result' ? { result: resultOf('D answers') } : undefined;
      expect(
        (
          await request(`${d.base}/jobs/${job_id}/${path}`, {
            token: d.integration.relay_token,
            method: 'POST',
            ...(body === undefined ? {} : { body }),
          })
        ).status,
      ).toBe(200);
    }
    await dFollow.until((follow) => finalOf(follow) !== undefined, 5_000, "D's completed view");
    expect(await request(`${c.base}/jobs/${job_id}`, { token: c.integration.client_token })).toMatchObject({
      status: 200,
      body: cBefore.body,
    });
    await cFollow.untilReplies(1);
    expect(cFollow.replies.map(({ json }) => json)).toEqual([cBefore.body]);

    // Then C's.
    expect((await request(`${c.base}/jobs/${job_id}/running`, { token: c.integration.relay_token, method: 'POST' })).status).toBe(200);
    expect(
      (await request(`${c.base}/jobs/${job_id}/result`, { token: c.integration.relay_token, body: { result: resultOf('C answers') } }))
        .status,
    ).toBe(200);
    await cFollow.until((follow) => finalOf(follow) !== undefined, 5_000, "C's completed view");

    expect(finalOf(cFollow)).toMatchObject({ job_id, integration_id: c.integration.integration_id, result: resultOf('C answers') });
    expect(finalOf(dFollow)).toMatchObject({ job_id, integration_id: d.integration.integration_id, result: resultOf('D answers') });
    expect(await request(`${c.base}/jobs/${job_id}`, { token: c.integration.client_token })).toMatchObject({
      status: 200,
      body: { state: 'completed', result: resultOf('C answers') },
    });
    expect(await request(`${d.base}/jobs/${job_id}`, { token: d.integration.client_token })).toMatchObject({
      status: 200,
      body: { state: 'completed', result: resultOf('D answers') },
    });
    // A retried create is each one's own duplicate.
    expect(
      (
        await request(`${c.base}/jobs`, {
          token: c.integration.client_token,
          body: { job_id, purpose: 'live_analysis', payload: transcript('C asks') },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await request(`${d.base}/jobs`, {
          token: d.integration.client_token,
          body: { job_id, purpose: 'live_analysis', payload: transcript('D asks') },
        })
      ).status,
    ).toBe(200);
  });

  it("cancelling one's job leaves the other's open, and a cancel of C's id by D before it has one is an unknown id's answer", async () => {
    const { c, d } = await twoTenants();
    const job_id = randomUUID();
    const body = { job_id, purpose: 'live_analysis', payload: transcript('the same content') };
    expect((await request(`${c.base}/jobs`, { token: c.integration.client_token, body })).status).toBe(201);
    expect(await request(`${d.base}/jobs/${job_id}/cancel`, { token: d.integration.client_token, method: 'POST' })).toMatchObject({
      status: 404,
      body: { error: { code: 'job_not_found' } },
    });

    // The very same body from D: still a job of D's own, not C's answered as a duplicate.
    expect(await request(`${d.base}/jobs`, { token: d.integration.client_token, body })).toMatchObject({
      status: 201,
      body: { integration_id: d.integration.integration_id },
    });
    expect(await request(`${d.base}/jobs/${job_id}/cancel`, { token: d.integration.client_token, method: 'POST' })).toMatchObject({
      status: 200,
      body: { state: 'cancelled' },
    });
    const cJob = await request(`${c.base}/jobs/${job_id}`, { token: c.integration.client_token });
    expect(cJob).toMatchObject({
      status: 200,
      body: { integration_id: c.integration.integration_id, state: expect.stringMatching(/^(created|delivered)$/) },
    });
    // C's plugin still runs and completes it; D's plugin cannot (its job was cancelled).
    expect(
      await request(`${d.base}/jobs/${job_id}/result`, { token: d.integration.relay_token, body: { result: resultOf('late') } }),
    ).toMatchObject({ status: 409, body: { error: { code: 'job_settled' } } });
    expect(
      (await request(`${c.base}/jobs/${job_id}/result`, { token: c.integration.relay_token, body: { result: resultOf('C answers') } }))
        .status,
    ).toBe(200);
    expect(await request(`${c.base}/jobs/${job_id}`, { token: c.integration.client_token })).toMatchObject({
      body: { state: 'completed', result: resultOf('C answers') },
    });
    expect(await request(`${d.base}/jobs/${job_id}`, { token: d.integration.client_token })).toMatchObject({
      body: { state: 'cancelled' },
    });
  });
});
