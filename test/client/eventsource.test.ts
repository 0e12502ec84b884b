/**
 * A client no one here wrote reads our Form A stream correctly: the `eventsource` package (the WHATWG
 * EventSource, its `fetch` option adding the Bearer header), reconnecting on its own with `Last-Event-ID`
 * after the connection is cut, gets every terminal reply exactly once.
 */
import { EventSource } from 'eventsource';
import { afterEach, expect, it } from 'vitest';
import { cuttableProxy } from '../support/proxy.js';
import { TOKEN, startHost } from '../support/host.js';
import { post, script } from '../support/http.js';
import { waitFor } from '../support/wait.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('the eventsource package gets every terminal reply once across a cut connection', async () => {
  const host = await startHost();
  cleanups.push(() => host.cleanup());
  const proxy = await cuttableProxy(host.url);
  cleanups.push(() => proxy.close());
  const replies: Array<{ id: string; task_id: string }> = [];
  let opens = 0;
  const source = new EventSource(`${proxy.url}/v1/events?session_id=s-1`, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, authorization: `Bearer ${TOKEN}` } }),
  });
  cleanups.push(() => source.close());
  source.onmessage = (event) => {
    const reply = JSON.parse(event.data) as { task_id: string; status: string };
    if (event.lastEventId !== '' && reply.status === 'message') replies.push({ id: event.lastEventId, task_id: reply.task_id });
  };
  // Counts every open, the reconnects included.
  await new Promise<void>((resolve) => (source.onopen = () => ((opens += 1), resolve())));
  const sent: string[] = [];
  for (const [i, ms] of [0, 600, 1200].entries()) {
    const task_id = `t-${i}`;
    sent.push(task_id);
    expect(
      (await post(host.url, TOKEN, { session_id: 's-1', task_id, text: script({ sleep: ms }, { message: `reply ${i}` }) })).status,
    ).toBe(202);
  }
  await waitFor('the first reply', () => replies.length === 1);
  proxy.cut();
  await waitFor('every reply', () => replies.length === 3);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(replies.map((r) => r.task_id)).toEqual(sent);
  expect(new Set(replies.map((r) => r.id)).size).toBe(3);
  expect(opens).toBeGreaterThanOrEqual(2);
});
