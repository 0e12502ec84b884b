/**
 * The backend's `/metrics` over real loopback HTTP: the operator's token or nothing, the Prometheus text
 * format, values that move as a job is created, delivered, delivered again and completed, and no label
 * that carries an id. One node on SQLite, and one on PostgreSQL with a broker (its store's metrics).
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createBackendRelay, type BackendRelay, type BackendRelayOptions } from '../../adapters/backend/relay.js';
import { NATS_URL } from '../support/brokers.js';
import { tempDir } from '../support/host.js';
import { request } from '../support/http.js';
import { expectNoIds, scrape } from '../support/metrics.js';
import { POSTGRES_URL, testSchema } from '../support/postgres.js';
import { SseConnection } from '../support/sse.js';
import { eventually } from '../support/wait.js';

const OPERATOR = 'operator-token';
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

async function start(options: Partial<BackendRelayOptions> = {}): Promise<{ relay: BackendRelay; url: string }> {
  const dir = tempDir();
  const relay = await createBackendRelay(options.store === undefined ? { db: join(dir, 'backend.db'), ...options } : options);
  stops.push(async () => {
    await relay.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { relay, url: await relay.listen() };
}

const job = () => ({
  job_id: randomUUID(),
  purpose: 'live_analysis',
  payload: { session_id: 's', transcript: [{ speaker: 'a', text: 'hi' }] },
});
const result = { insights: [{ text: 'Ask about the budget.', kind: 'question', confidence: 0.7 }] };

describe('backend /metrics', () => {
  it("takes the operator's token, and nothing else", async () => {
    const { relay, url } = await start({ operatorToken: OPERATOR });
    const created = await relay.backend.integrations.create('assistant-relay');
    if ('refused' in created) throw new Error(created.refused.message);
    for (const token of [undefined, 'wrong', created.relay_token, created.client_token]) {
      const refused = await request(`${url}/metrics`, token === undefined ? {} : { token });
      expect(refused).toMatchObject({ status: 401, body: { error: { code: 'unauthorized' } } });
    }
    expect((await request(`${url}/metrics`, { token: OPERATOR })).status).toBe(200);
  });

  it('is not there without an operator token', async () => {
    const { url } = await start();
    expect((await request(`${url}/metrics`, { token: OPERATOR })).status).toBe(404);
  });

  it('counts a job created, delivered, delivered again and completed; reads jobs by state and streams from the fold', async () => {
    const { relay, url } = await start({ operatorToken: OPERATOR });
    const created = await relay.backend.integrations.create('assistant-relay');
    if ('refused' in created) throw new Error(created.refused.message);
    const { integration_id, relay_token, client_token } = created;
    const base = `${url}/api/v1/assistant/integrations/${integration_id}`;

    const before = await scrape(url, OPERATOR);
    expect(before.value('assistant_relay_jobs_created_total')).toBe(0);
    expect(before.value('assistant_relay_jobs', { state: 'completed' })).toBe(0);
    expect(before.value('assistant_relay_integrations_held')).toBe(1);
    expect(before.value('assistant_relay_integrations_online')).toBe(0);
    // One node on SQLite owns every integration it holds.
    expect(before.value('assistant_relay_integrations_owned')).toBe(1);
    expect(before.value('assistant_relay_streams_open', { kind: 'jobs' })).toBe(0);
    expect(before.value('assistant_relay_result_checks', { state: 'running' })).toBe(0);
    expect(before.samples.some((s) => s.name === 'assistant_relay_process_cpu_seconds_total')).toBe(true);

    const first = await SseConnection.open(`${base}/stream`, { token: relay_token });
    const body = job();
    expect((await request(`${base}/jobs`, { token: client_token, body })).status).toBe(201);
    await first.until((c) => c.frames.length === 1, 5_000, 'the job frame');
    first.close();
    // Without a cursor, the job the first stream was sent goes out again, under a new lease.
    const second = await SseConnection.open(`${base}/stream`, { token: relay_token });
    await second.until((c) => c.frames.length === 1, 5_000, 'the job again');
    const follower = await SseConnection.open(`${base}/jobs/${body.job_id}/events`, { token: client_token });
    await follower.until((c) => c.frames.length === 1, 5_000, "the job's view");

    const open = await scrape(url, OPERATOR);
    expect(open.value('assistant_relay_jobs_created_total')).toBe(1);
    expect(open.value('assistant_relay_job_deliveries_total')).toBe(2);
    expect(open.value('assistant_relay_job_redeliveries_total')).toBe(1);
    expect(open.value('assistant_relay_jobs', { state: 'delivered' })).toBe(1);
    expect(open.value('assistant_relay_streams_open', { kind: 'jobs' })).toBe(1);
    expect(open.value('assistant_relay_streams_open', { kind: 'followers' })).toBe(1);

    expect((await request(`${base}/jobs/${body.job_id}/running`, { token: relay_token, method: 'POST' })).status).toBe(200);
    expect((await request(`${base}/jobs/${body.job_id}/result`, { token: relay_token, body: { result } })).status).toBe(200);
    await follower.until((c) => c.frames.length >= 2 && c.frames.at(-1)!.data.includes('completed'), 5_000, 'the completed view');
    const done = await scrape(url, OPERATOR);
    expect(done.value('assistant_relay_jobs_settled_total', { state: 'completed' })).toBe(1);
    expect(done.value('assistant_relay_jobs_settled_total', { state: 'failed' })).toBe(0);
    expect(done.value('assistant_relay_jobs', { state: 'completed' })).toBe(1);
    expect(done.value('assistant_relay_jobs', { state: 'delivered' })).toBe(0);
    const route = { method: 'POST', route: '/api/v1/assistant/integrations/:id/jobs', status: '201' };
    expect(done.value('assistant_relay_http_requests_total', route)).toBe(1);
    expect(done.value('assistant_relay_http_request_duration_seconds_count', route)).toBe(1);
    expect(done.value('assistant_relay_http_request_duration_seconds_bucket', { ...route, le: '+Inf' })).toBe(1);
    expectNoIds(done, [integration_id, body.job_id, relay_token, client_token]);
    second.close();
    follower.close();
  });

  it('on PostgreSQL with a broker: the store, its queue, the fold lag and the broker', async () => {
    const { relay, url } = await start({
      store: { url: POSTGRES_URL, schema: testSchema() },
      broker: { url: NATS_URL, namespace: `metrics_${randomUUID().slice(0, 8)}` },
      operatorToken: OPERATOR,
    });
    const created = await relay.backend.integrations.create('assistant-relay');
    if ('refused' in created) throw new Error(created.refused.message);
    const body = job();
    const base = `${url}/api/v1/assistant/integrations/${created.integration_id}`;
    expect((await request(`${base}/jobs`, { token: created.client_token, body })).status).toBe(201);
    const scraped = await scrape(url, OPERATOR);
    expect(scraped.value('assistant_relay_jobs_created_total')).toBe(1);
    expect(scraped.value('assistant_relay_store_append_duration_seconds_count')).toBeGreaterThanOrEqual(2);
    // The first retention pass may still be deciding in the new integration's partition: the queue empties.
    await eventually(
      'no decision queued',
      async () => (await scrape(url, OPERATOR)).value('assistant_relay_store_decisions_queued'),
      (queued) => queued === 0,
    );
    expect(scraped.value('assistant_relay_fold_lag_events')).toBe(0);
    expect(scraped.value('assistant_relay_broker_connected')).toBe(1);
    // The node holds the integration it served, and owns it: the job created here claimed it.
    expect(scraped.value('assistant_relay_integrations_held')).toBe(1);
    expect(scraped.value('assistant_relay_integrations_owned')).toBe(1);
  });
});
