/**
 * What keeps the backend's log bounded by its integrations (PROTOCOL.md 6e.22 to 6e.24), against a
 * caller that does what no real client does, over loopback HTTP with a simulated clock: a client that
 * creates and cancels jobs as fast as it can send requests, a plugin that reconnects its stream in a loop,
 * and the operator's pairing tickets, used or left to expire. Each is refused past its rate with 429, its
 * own code and an honest Retry-After, and the log stops growing; what retention may forget goes.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { RETENTION_CHECK_MS } from '../../engine/core/retention.js';
import type { ReasoningEngineConfig } from '../../engine/reasoning/config.js';
import { heartbeatOf, serveBackend, type ServedBackend } from '../support/backend.js';
import { SimulatedClock } from '../support/clock.js';
import { request, type JsonResponse } from '../support/http.js';
import { countBackendEvents, readBackendEvents } from '../support/log.js';
import { SseConnection } from '../support/sse.js';

const PAYLOAD = { session_id: 'call', transcript: [{ speaker: 'a', text: 'our budget is set' }] };
const OPERATOR = 'operator-token-for-the-bounds-tests';
const MINUTE = 60_000;

const closing: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function serve(config: Omit<ReasoningEngineConfig, 'clock'> = {}, options: { readonly pairing?: 'ticket' } = {}) {
  const clock = new SimulatedClock();
  const served = await serveBackend({ config: { clock, ...config }, operatorToken: OPERATOR, ...options });
  closing.push(() => served.stop());
  const created = await served.backend.integrations.create('assistant-relay');
  if ('refused' in created) throw new Error(created.refused.message);
  const base = `${served.url}/api/v1/assistant/integrations/${created.integration_id}`;
  return { served, clock, id: created.integration_id, base, client: created.client_token, relay: created.relay_token };
}

const posted = (url: string, token: string, body?: unknown) =>
  request(url, { token, method: 'POST', ...(body === undefined ? {} : { body }) });
const jobBody = () => ({ job_id: randomUUID(), purpose: 'live_analysis', payload: PAYLOAD, deadline_ms: 3_600_000 });

function expectOver(
  answer: { readonly status: number; readonly body: unknown; readonly retryAfter: string | null | undefined },
  code: string,
  retryAfter: number,
): void {
  expect(answer.status).toBe(429);
  expect(answer.body).toMatchObject({ error: { code, message: expect.any(String) } });
  expect(answer.retryAfter).toBe(String(retryAfter));
}

const over = (answer: JsonResponse) => ({ status: answer.status, body: answer.body, retryAfter: answer.headers.get('retry-after') });

async function logged(served: ServedBackend, type: string): Promise<number> {
  return (await readBackendEvents(served.db)).filter((event) => event.type === type).length;
}

/** Retention passes until `done`, an hour of the clock apart. */
async function passUntil(clock: SimulatedClock, done: () => Promise<boolean>, what: string): Promise<void> {
  for (let hour = 0; !(await done()); hour += 1) {
    if (hour > 24) throw new Error(`no pass forgot ${what}`);
    clock.increment(RETENTION_CHECK_MS);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('hostile: a client creating and cancelling jobs in a loop (--max-jobs-per-minute, --max-settled-jobs)', () => {
  it('past the rate each create is 429 too_many_jobs until the minute ends and the log stops growing; a retried create is answered its job; retention keeps the newest settled jobs only', async () => {
    const { served, clock, base, client } = await serve({ quotas: { maxJobsPerMinute: 20, maxSettledJobs: 5 } });
    clock.increment(15_000);
    const bodies: Array<ReturnType<typeof jobBody>> = [];
    const refused: JsonResponse[] = [];
    for (let i = 0; i < 30; i += 1) {
      const body = jobBody();
      const answer = await posted(`${base}/jobs`, client, body);
      if (answer.status !== 201) {
        refused.push(answer);
        continue;
      }
      bodies.push(body);
      expect((await posted(`${base}/jobs/${body.job_id}/cancel`, client)).status).toBe(200);
    }
    // Never more than 1 open: the limit on open jobs could not have stopped this.
    expect(bodies).toHaveLength(20);
    expect(refused).toHaveLength(10);
    for (const answer of refused) expectOver(over(answer), 'too_many_jobs', 45);
    const before = await countBackendEvents(served.db);
    for (let i = 0; i < 20; i += 1) expectOver(over(await posted(`${base}/jobs`, client, jobBody())), 'too_many_jobs', 45);
    expect(await countBackendEvents(served.db)).toBe(before);
    expect(await logged(served, 'job.created')).toBe(20);
    // Idempotency first: a create retried for a job that exists is answered the job, over the rate or not.
    expect(await posted(`${base}/jobs`, client, bodies[0])).toMatchObject({
      status: 200,
      body: { job_id: bodies[0]!.job_id, state: 'cancelled' },
    });

    // As Retry-After said: the next minute lets creates through again.
    clock.increment(45_000);
    const last = jobBody();
    expect((await posted(`${base}/jobs`, client, last)).status).toBe(201);
    // Cancelled too, so that what the pass keeps does not hang on whether its deadline came first.
    expect((await posted(`${base}/jobs/${last.job_id}/cancel`, client)).status).toBe(200);

    // The retention pass keeps the newest 5 settled jobs of the integration, long before the retention is up.
    await passUntil(clock, async () => (await logged(served, 'job.created')) === 5, 'the oldest settled jobs');
    const kept = new Set((await readBackendEvents(served.db)).filter((event) => event.type === 'job.created').map((event) => event.job_id));
    expect([...kept]).toEqual([...bodies.slice(-4), last].map((body) => body.job_id));
    expect((await request(`${base}/jobs/${bodies[0]!.job_id}`, { token: client })).status).toBe(404);
    expect((await request(`${base}/jobs/${bodies.at(-1)!.job_id}`, { token: client })).body).toMatchObject({ state: 'cancelled' });
  });
});

describe('hostile: a plugin reconnecting its stream in a loop (--max-stream-opens-per-minute)', () => {
  it('past the rate each open is 429 too_many_stream_opens until the minute ends, and logs nothing: the deliveries logged are at most open jobs × the rate', async () => {
    const { served, clock, base, client, relay } = await serve({ quotas: { maxStreamsPerMinute: 4 } });
    expect((await posted(`${base}/heartbeat`, relay, heartbeatOf())).status).toBe(200);
    for (let i = 0; i < 3; i += 1) expect((await posted(`${base}/jobs`, client, jobBody())).status).toBe(201);
    clock.increment(30_000);
    const answers: SseConnection[] = [];
    for (let i = 0; i < 12; i += 1) {
      // No Last-Event-ID: each stream that opens is sent every delivered job again.
      const stream = await SseConnection.open(`${base}/stream`, { token: relay });
      closing.push(() => stream.close());
      if (stream.status === 200)
        await stream.until((c) => c.frames.filter((frame) => frame.id !== undefined).length === 3, 10_000, 'the three jobs');
      else await stream.untilEnded();
      answers.push(stream);
      stream.close();
    }
    expect(answers.filter((stream) => stream.status === 200)).toHaveLength(4);
    for (const stream of answers.filter((each) => each.status !== 200)) {
      expectOver(
        { status: stream.status, body: JSON.parse(stream.body), retryAfter: stream.headers['retry-after'] as string | undefined },
        'too_many_stream_opens',
        30,
      );
    }
    expect(await logged(served, 'job.delivered')).toBe(3 * 4);
    const before = await countBackendEvents(served.db);
    for (let i = 0; i < 5; i += 1) {
      const stream = await SseConnection.open(`${base}/stream`, { token: relay });
      closing.push(() => stream.close());
      await stream.untilEnded();
      expect(stream.status).toBe(429);
    }
    expect(await countBackendEvents(served.db)).toBe(before);
    // The next minute takes a plugin back.
    clock.increment(30_000);
    const back = await SseConnection.open(`${base}/stream`, { token: relay });
    closing.push(() => back.close());
    expect(back.status).toBe(200);
  });
});

describe("the operator's pairing tickets", () => {
  it('are each in a stream of their own, and gone from the log after the first retention pass once used or expired', async () => {
    const { served, clock } = await serve({}, { pairing: 'ticket' });
    const issue = async (ttl_ms?: number) => {
      const answer = await request(`${served.url}/api/v1/admin/pairing-tickets`, {
        token: OPERATOR,
        body: ttl_ms === undefined ? {} : { ttl_ms },
      });
      expect(answer.status, answer.text).toBe(201);
      return (answer.body as { ticket: string }).ticket;
    };
    const used = await issue();
    await issue(MINUTE);
    await issue();
    const start = await request(`${served.url}/api/v1/pairings`, {
      body: { provider_kind: 'assistant-relay', schema_version: 1, envelope_version: 1, ticket: used },
    });
    expect(start.status, start.text).toBe(201);
    const tickets = async () => (await readBackendEvents(served.db)).filter((event) => event.type === 'pairing_ticket.issued').length;
    expect(await tickets()).toBe(3);
    clock.increment(MINUTE);
    // The used one and the expired one go; the one still worth a pairing stays.
    await passUntil(clock, async () => (await tickets()) === 1, 'the used and the expired ticket');
    const left = await issue();
    expect(await tickets()).toBe(2);
    expect(
      (
        await request(`${served.url}/api/v1/pairings`, {
          body: { provider_kind: 'assistant-relay', schema_version: 1, envelope_version: 1, ticket: left },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await request(`${served.url}/api/v1/pairings`, {
          body: { provider_kind: 'assistant-relay', schema_version: 1, envelope_version: 1, ticket: used },
        })
      ).body,
    ).toMatchObject({ error: { code: 'pairing_ticket_invalid' } });
  });
});
