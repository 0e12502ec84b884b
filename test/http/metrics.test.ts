/**
 * The host's `/metrics` over real loopback HTTP: the host's bearer token, the Prometheus text format,
 * values that move as a turn runs (a session open, a task pending, a reader, replies) and as a callback
 * is delivered, and no label that carries an id (a session's, a task's, a callback's URL).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { post, request, script } from '../support/http.js';
import { TOKEN, startHost, type TestHost } from '../support/host.js';
import { expectNoIds, scrape } from '../support/metrics.js';
import { Receiver, closeReceivers } from '../support/receiver.js';
import { SseConnection } from '../support/sse.js';
import { until } from './fixture.js';

const hosts: TestHost[] = [];
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.cleanup();
  await closeReceivers();
});

async function start(): Promise<TestHost> {
  const host = await startHost();
  hosts.push(host);
  return host;
}

describe('host /metrics', () => {
  it("takes the host's token, and nothing else", async () => {
    const { url } = await start();
    for (const token of [undefined, 'wrong']) {
      const refused = await request(`${url}/metrics`, token === undefined ? {} : { token });
      expect(refused).toMatchObject({ status: 401, body: { error: { code: 'unauthorized' } } });
    }
    expect((await request(`${url}/metrics`, { token: TOKEN })).status).toBe(200);
  });

  it('reads sessions, tasks and readers from the fold, and counts replies and requests by route pattern', async () => {
    const { url } = await start();
    const before = await scrape(url, TOKEN);
    expect(before.value('assistant_relay_sessions_open')).toBe(0);
    expect(before.value('assistant_relay_replies_total', { kind: 'terminal' })).toBe(0);

    const stream = await SseConnection.open(`${url}/v1/events?session_id=session-one`, { token: TOKEN });
    expect(
      (await post(url, TOKEN, { session_id: 'session-one', task_id: 'task-one', text: script({ typing: 'working' }, { message: 'done' }) }))
        .status,
    ).toBe(202);
    await stream.untilReplies(1);
    // A second task that waits: pending until the host closes.
    expect((await post(url, TOKEN, { session_id: 'session-one', task_id: 'task-two', text: script({ sleep: 600_000 }) })).status).toBe(202);
    expect((await request(`${url}/v1/sessions/session-one`, { token: TOKEN })).status).toBe(200);

    const after = await scrape(url, TOKEN);
    expect(after.value('assistant_relay_sessions_open')).toBe(1);
    expect(after.value('assistant_relay_tasks_pending')).toBe(1);
    expect(after.value('assistant_relay_streams_open', { kind: 'replies' })).toBe(1);
    expect(after.value('assistant_relay_replies_total', { kind: 'progress' })).toBe(1);
    expect(after.value('assistant_relay_replies_total', { kind: 'terminal' })).toBe(1);
    expect(after.value('assistant_relay_http_requests_total', { method: 'POST', route: '/v1/incoming', status: '202' })).toBe(2);
    expect(after.value('assistant_relay_http_requests_total', { method: 'GET', route: '/v1/sessions/:session_id', status: '200' })).toBe(1);
    expectNoIds(after, ['session-one', 'task-one', 'task-two', TOKEN]);
    stream.close();
  });

  it('counts callback deliveries by outcome', async () => {
    const { url, host } = await start();
    const receiver = await Receiver.start();
    const callback = { url: `${receiver.url}/cb`, token: 'callback-token' };
    expect((await post(url, TOKEN, { session_id: 'session-cb', task_id: 'task-cb', text: 'hello', callback })).status).toBe(202);
    await until(() => receiver.requests.length > 0 && host.deliveryStats().queued === 0, 'every delivery of the turn');
    const scraped = await scrape(url, TOKEN);
    expect(scraped.value('assistant_relay_callback_deliveries_total', { outcome: 'succeeded' })).toBe(receiver.requests.length);
    expect(scraped.value('assistant_relay_callback_deliveries_total', { outcome: 'abandoned' })).toBe(0);
    expect(scraped.value('assistant_relay_callback_deliveries_queued')).toBe(0);
    expectNoIds(scraped, ['session-cb', 'task-cb', receiver.url, 'callback-token']);
  });
});
