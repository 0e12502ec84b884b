/**
 * Issue 23, part 2: one integration's token used as an attacker would, against a backend relay over
 * loopback HTTP (PROTOCOL.md 6e.18 to 6e.21). Each attack as it was reproduced (many creates, many job
 * followers, heartbeat status flips, rekey floods) is refused past its bound with 429, its own code and an
 * honest Retry-After, never a 5xx; the log holds no more than the bound allows (its events are counted);
 * and a quiet second integration's jobs keep completing meanwhile. The clock is simulated, so that each
 * Retry-After is exact and moving past it shows what it promised.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Quotas } from '../../machines/reasoning/quotas.js';
import { BackendClient, BackendError } from '../../adapters/client/backend-client.js';
import { rotateKeys } from '../../adapters/client/rekey.js';
import { heartbeatOf, serveBackend, type ServedBackend } from '../support/backend.js';
import { SimulatedClock } from '../support/clock.js';
import { request, type JsonResponse } from '../support/http.js';
import { readBackendEvents } from '../support/log.js';
import { SseConnection } from '../support/sse.js';
import { eventually } from '../support/wait.js';

const PAYLOAD = { session_id: 'call', transcript: [{ speaker: 'a', text: 'our budget is set' }] };
const RESULT = { insights: [{ text: 'the budget is set', kind: 'fact', confidence: 0.9 }] };
const KEY = 'A'.repeat(43);

interface Tenant {
  readonly id: string;
  readonly base: string;
  readonly client: string;
  readonly relay: string;
}

interface Served {
  readonly served: ServedBackend;
  readonly clock: SimulatedClock;
  readonly hostile: Tenant;
  readonly quiet: Tenant & { readonly stream: SseConnection };
}

const closing: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function tenant(served: ServedBackend): Promise<Tenant> {
  const created = await served.backend.integrations.create('assistant-relay');
  if ('refused' in created) throw new Error(created.refused.message);
  return {
    id: created.integration_id,
    base: `${served.url}/api/v1/assistant/integrations/${created.integration_id}`,
    client: created.client_token,
    relay: created.relay_token,
  };
}

/** A backend on a simulated clock, a hostile integration and a quiet one whose plugin holds its stream. */
async function serve(quotas: Partial<Quotas> = {}): Promise<Served> {
  const clock = new SimulatedClock();
  const served = await serveBackend({ config: { clock, quotas } });
  closing.push(() => served.stop());
  const hostile = await tenant(served);
  const quiet = await tenant(served);
  expect((await request(`${quiet.base}/heartbeat`, { token: quiet.relay, body: heartbeatOf() })).status).toBe(200);
  const stream = await SseConnection.open(`${quiet.base}/stream`, { token: quiet.relay });
  closing.push(() => stream.close());
  expect(stream.status).toBe(200);
  return { served, clock, hostile, quiet: { ...quiet, stream } };
}

const posted = (url: string, token: string, body?: unknown) =>
  request(url, { token, method: 'POST', ...(body === undefined ? {} : { body }) });
const jobBody = (deadline_ms = 3_600_000) => ({ job_id: randomUUID(), purpose: 'live_analysis', payload: PAYLOAD, deadline_ms });

/** A refusal for load: 429, its code, and a Retry-After of whole seconds (this many, if given). */
function expectOver(
  answer: Pick<JsonResponse, 'status' | 'body'> & { readonly retryAfter: string | null },
  code: string,
  retryAfter?: number,
): void {
  expect(answer.status).toBe(429);
  expect(answer.body).toMatchObject({ error: { code, message: expect.any(String) } });
  expect(answer.retryAfter).toMatch(/^[1-9]\d*$/);
  if (retryAfter !== undefined) expect(Number(answer.retryAfter)).toBe(retryAfter);
}

const over = (answer: JsonResponse) => ({ status: answer.status, body: answer.body, retryAfter: answer.headers.get('retry-after') });

/** How many events of this type the log holds for the integration. */
async function logged(served: ServedBackend, tenant: Tenant, type: string): Promise<number> {
  return (await readBackendEvents(served.db)).filter((event) => event.type === type && event.integration_id === tenant.id).length;
}

/** The quiet integration's job goes all the way: created, sent on its plugin's stream, completed, read. */
async function quietJobCompletes({ quiet }: Served): Promise<void> {
  const body = jobBody();
  expect((await posted(`${quiet.base}/jobs`, quiet.client, body)).status).toBe(201);
  await quiet.stream.until((c) => c.frames.some((frame) => frame.data.includes(body.job_id)), 10_000, 'the quiet job on its stream');
  expect((await posted(`${quiet.base}/jobs/${body.job_id}/result`, quiet.relay, { result: RESULT })).status).toBe(200);
  expect((await request(`${quiet.base}/jobs/${body.job_id}`, { token: quiet.client })).body).toMatchObject({ state: 'completed' });
}

/** Opens a job follower; a refused one is read to its end. */
async function follow(url: string, token: string): Promise<SseConnection> {
  const connection = await SseConnection.open(url, { token });
  closing.push(() => connection.close());
  if (connection.status !== 200) await connection.untilEnded();
  return connection;
}

const followerOver = (c: SseConnection) => ({
  status: c.status,
  body: c.status === 200 ? undefined : JSON.parse(c.body),
  retryAfter: (c.headers['retry-after'] as string | undefined) ?? null,
});

describe('hostile: many creates on one token (--max-open-jobs)', () => {
  it('past the bound each create is 429 too_many_open_jobs until the earliest deadline, nothing logged; a retried create is answered its job; the quiet tenant goes on', async () => {
    const s = await serve();
    const { hostile, served, clock } = s;
    const bodies = Array.from({ length: 200 }, () => jobBody(60_000));
    const [answers] = await Promise.all([
      Promise.all(bodies.map((body) => posted(`${hostile.base}/jobs`, hostile.client, body))),
      quietJobCompletes(s),
    ]);
    expect(answers.every((answer) => answer.status < 500)).toBe(true);
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(32);
    for (const answer of answers.filter((each) => each.status !== 201)) expectOver(over(answer), 'too_many_open_jobs', 60);
    expect(await logged(served, hostile, 'job.created')).toBe(32);
    // Idempotency first: a create retried for a job that exists is answered the job, full or not.
    const kept = bodies[answers.findIndex((answer) => answer.status === 201)]!;
    expect(await posted(`${hostile.base}/jobs`, hostile.client, kept)).toMatchObject({
      status: 200,
      body: { job_id: kept.job_id, state: 'created' },
    });
    await quietJobCompletes(s);
    // As Retry-After said: by the earliest deadline, slots are free.
    clock.increment(60_000);
    await eventually(
      'the hostile jobs expired',
      () => logged(served, hostile, 'job.expired'),
      (n) => n === 32,
    );
    expect((await posted(`${hostile.base}/jobs`, hostile.client, jobBody())).status).toBe(201);
  });
});

describe('hostile: many job followers (--max-followers, --max-node-followers)', () => {
  it('past the bound on one token each follower is 429 too_many_followers with Retry-After; one that leaves frees its slot; the quiet tenant follows meanwhile', async () => {
    const s = await serve();
    const { hostile, quiet } = s;
    const body = jobBody();
    expect((await posted(`${hostile.base}/jobs`, hostile.client, body)).status).toBe(201);
    const url = `${hostile.base}/jobs/${body.job_id}/events`;
    const followers = await Promise.all(Array.from({ length: 150 }, () => follow(url, hostile.client)));
    expect(followers.every((c) => c.status < 500)).toBe(true);
    const open = followers.filter((c) => c.status === 200);
    expect(open).toHaveLength(64);
    for (const refused of followers.filter((c) => c.status !== 200)) expectOver(followerOver(refused), 'too_many_followers', 5);
    // The quiet tenant follows its own job and it completes.
    const mine = jobBody();
    expect((await posted(`${quiet.base}/jobs`, quiet.client, mine)).status).toBe(201);
    const watching = await follow(`${quiet.base}/jobs/${mine.job_id}/events`, quiet.client);
    expect(watching.status).toBe(200);
    await quietJobCompletes(s);
    // A follower that leaves frees its slot, once the backend has seen it go.
    open[0]!.close();
    const again = await eventually(
      'a follower let in once one left',
      () => follow(url, hostile.client),
      (c) => c.status === 200,
    );
    expect(again.status).toBe(200);
  });

  it('past the bound of the node, followers of every integration together are 429 too_many_node_followers', async () => {
    const s = await serve({ maxFollowers: 4, maxNodeFollowers: 10 });
    const tenants = [s.hostile, await tenant(s.served), await tenant(s.served)];
    const urls: string[] = [];
    for (const each of tenants) {
      const body = jobBody();
      expect((await posted(`${each.base}/jobs`, each.client, body)).status).toBe(201);
      urls.push(`${each.base}/jobs/${body.job_id}/events`);
    }
    const statuses = async (url: string, token: string, n: number) => Promise.all(Array.from({ length: n }, () => follow(url, token)));
    const first = await statuses(urls[0]!, tenants[0]!.client, 6);
    expect(first.filter((c) => c.status === 200)).toHaveLength(4);
    for (const refused of first.filter((c) => c.status !== 200)) expectOver(followerOver(refused), 'too_many_followers', 5);
    expect((await statuses(urls[1]!, tenants[1]!.client, 4)).every((c) => c.status === 200)).toBe(true);
    const third = await statuses(urls[2]!, tenants[2]!.client, 4);
    expect(third.filter((c) => c.status === 200)).toHaveLength(2);
    for (const refused of third.filter((c) => c.status !== 200)) expectOver(followerOver(refused), 'too_many_node_followers', 5);
    // Jobs go on: the bound is on streams, not on work.
    await quietJobCompletes(s);
  });
});

describe('hostile: heartbeat status flips (--status-interval)', () => {
  it("news sooner than the interval is 429 too_many_status_changes until it has passed, nothing logged; the integration stays online; a running job's renewals are not logged one by one", async () => {
    const s = await serve();
    const { hostile, served, clock } = s;
    expect((await request(`${hostile.base}/heartbeat`, { token: hostile.relay, body: heartbeatOf() })).status).toBe(200);
    // A job the plugin runs: every heartbeat names it.
    const stream = await SseConnection.open(`${hostile.base}/stream`, { token: hostile.relay });
    closing.push(() => stream.close());
    const body = jobBody();
    expect((await posted(`${hostile.base}/jobs`, hostile.client, body)).status).toBe(201);
    await stream.until((c) => c.frames.some((frame) => frame.data.includes(body.job_id)), 10_000, 'the job on the stream');
    expect((await posted(`${hostile.base}/jobs/${body.job_id}/running`, hostile.relay)).status).toBe(200);
    const before = { seen: await logged(served, hostile, 'integration.seen'), all: (await readBackendEvents(served.db)).length };
    const flips = Array.from({ length: 400 }, (_, i) =>
      heartbeatOf({ status: i % 2 === 0 ? 'busy' : 'ready', running_job_ids: [body.job_id] }),
    );
    const [answers] = await Promise.all([
      (async () => {
        const all: JsonResponse[] = [];
        for (const beat of flips) all.push(await request(`${hostile.base}/heartbeat`, { token: hostile.relay, body: beat }));
        return all;
      })(),
      quietJobCompletes(s),
    ]);
    expect(answers.every((answer) => answer.status < 500)).toBe(true);
    answers.forEach((answer, i) => {
      if (flips[i]!.status === 'busy') expectOver(over(answer), 'too_many_status_changes', 30);
      else expect(answer.status).toBe(200);
    });
    expect(await logged(served, hostile, 'integration.seen')).toBe(before.seen);
    expect(await logged(served, hostile, 'job.renewed')).toBe(0);
    // The quiet tenant's one job is all the log gained meanwhile (created, delivered, completed).
    expect((await readBackendEvents(served.db)).length - before.all).toBe(3);
    expect((await request(hostile.base, { token: hostile.client })).body).toMatchObject({ state: 'online', plugin: { status: 'ready' } });
    // Once the interval has passed, the news is logged, once.
    clock.increment(30_000);
    expect((await request(`${hostile.base}/heartbeat`, { token: hostile.relay, body: flips[0] })).status).toBe(200);
    expect(await logged(served, hostile, 'integration.seen')).toBe(before.seen + 1);
    expect(await logged(served, hostile, 'job.renewed')).toBe(1);
  });
});

describe('hostile: rekey floods (--rekey-replace-after, --max-rekeys-per-hour)', () => {
  const rekey = (id = randomUUID()) => ({ rekey_id: id, kid: 'AAAAAAAAAAAA', client_key: KEY, mac: KEY });

  it('one open at a time: others are 429 rekey_pending until it may be replaced; the same request again is answered; then at most six an hour, 429 too_many_rekeys past them', async () => {
    const s = await serve();
    const { hostile, served, clock } = s;
    const first = rekey();
    expect((await posted(`${hostile.base}/rekeys`, hostile.client, first)).status).toBe(201);
    const [answers] = await Promise.all([
      Promise.all(Array.from({ length: 300 }, () => posted(`${hostile.base}/rekeys`, hostile.client, rekey()))),
      quietJobCompletes(s),
    ]);
    for (const answer of answers) expectOver(over(answer), 'rekey_pending', 600);
    expect((await posted(`${hostile.base}/rekeys`, hostile.client, first)).status).toBe(200);
    expect(await logged(served, hostile, 'integration.rekey_requested')).toBe(1);
    // Answered, the next may come: up to six in the hour.
    expect((await posted(`${hostile.base}/rekeys/${first.rekey_id}`, hostile.relay, { assistant_key: KEY, mac: KEY })).status).toBe(200);
    for (let i = 1; i < 6; i += 1) {
      const next = rekey();
      expect((await posted(`${hostile.base}/rekeys`, hostile.client, next)).status).toBe(201);
      expect((await posted(`${hostile.base}/rekeys/${next.rekey_id}`, hostile.relay, { assistant_key: KEY, mac: KEY })).status).toBe(200);
    }
    const flood = await Promise.all(Array.from({ length: 100 }, () => posted(`${hostile.base}/rekeys`, hostile.client, rekey())));
    for (const answer of flood) expectOver(over(answer), 'too_many_rekeys', 3600);
    expect(await logged(served, hostile, 'integration.rekey_requested')).toBe(6);
    await quietJobCompletes(s);
    // The hour's end lets one through; one its plugin never answers is replaced once it is old enough.
    clock.increment(3_600_000);
    const unanswered = rekey();
    expect((await posted(`${hostile.base}/rekeys`, hostile.client, unanswered)).status).toBe(201);
    clock.increment(600_000);
    const replacing = rekey();
    expect((await posted(`${hostile.base}/rekeys`, hostile.client, replacing)).status).toBe(201);
    expect(
      (await posted(`${hostile.base}/rekeys/${unanswered.rekey_id}`, hostile.relay, { assistant_key: KEY, mac: KEY })).body,
    ).toMatchObject({ error: { code: 'rekey_not_found' } });
    expect(await logged(served, hostile, 'integration.rekey_requested')).toBe(8);
  });

  it('the client library reports a 429 with its code and when to try again', async () => {
    const s = await serve();
    const { hostile } = s;
    expect((await posted(`${hostile.base}/rekeys`, hostile.client, rekey())).status).toBe(201);
    const current = {
      kid: 'AAAAAAAAAAAA',
      client_to_assistant: new Uint8Array(32),
      assistant_to_client: new Uint8Array(32),
      confirm: new Uint8Array(32),
    };
    const refused = await rotateKeys({
      client: new BackendClient(hostile.base, hostile.client),
      integrationId: hostile.id,
      current,
      timeoutMs: 1_000,
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(BackendError);
    expect(refused).toMatchObject({
      status: 429,
      code: 'rekey_pending',
      retryAfterMs: 600_000,
      message: expect.stringMatching(/^the backend answered 429 rekey_pending: .* \(try again in 600 s\)$/),
    });
  });
});
