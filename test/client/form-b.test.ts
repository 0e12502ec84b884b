/**
 * The client library's Form B against the real host in Form B over real HTTP (issue 11): a conversation
 * kept append-only with each reply once, the typing indicator and its inactivity timer, the older
 * statuses, the listener's checks (token, UUID path), and a session the client closed answered
 * `session_ended`, which ends it at the host too.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FormBClient } from '../../adapters/client/form-b.js';
import type { Agent } from '../../index.js';
import { HeldAgent } from '../model/held-agent.js';
import { SimulatedClock } from '../support/clock.js';
import { TOKEN, startHost } from '../support/host.js';
import { script } from '../support/http.js';
import { eventually, waitFor } from '../support/wait.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(typingMs = 15_000, agent: Agent | 'script' = 'script') {
  const host = await startHost({ form: 'B', agent });
  cleanups.push(() => host.cleanup());
  // The client's typing timer runs on it.
  const clock = new SimulatedClock();
  const client = new FormBClient({ url: host.url, token: TOKEN, typingMs, clock });
  const base = await client.listen();
  cleanups.push(() => client.close());
  return { host, client, base, clock };
}

describe('client library, Form B', () => {
  it('keeps an append-only conversation: each reply once, errors in it, typing as an indicator', async () => {
    const { client } = await setUp();
    const store = client.conversation('c-1');
    const typed: string[] = [];
    store.subscribe((snapshot) => snapshot.context.typing && typed.push(snapshot.context.typing.label));
    await client.send('c-1', script({ typing: 'thinking' }, { sleep: 100 }, { message: 'found it' }));
    await eventually(
      'the reply',
      () => store.getSnapshot().context.entries,
      (e) => e.length === 2,
    );
    await client.send('c-1', script({ errored: { code: 'agent_error', message: 'no luck' } }));
    const entries = await eventually(
      'the error',
      () => store.getSnapshot().context.entries,
      (e) => e.length === 4,
    );
    expect(
      entries.map((e) =>
        e.kind === 'user'
          ? 'user'
          : e.kind === 'assistant'
            ? `assistant:${e.text}`
            : e.kind === 'tool_call'
              ? `tool:${e.label}`
              : `error:${e.code}`,
      ),
    ).toEqual(['user', 'assistant:found it', 'user', 'error:agent_error']);
    expect(typed).toContain('thinking');
    expect(store.getSnapshot().context.typing).toBeUndefined();
  });

  it('takes the older statuses, and a message delivered twice once', async () => {
    const { client, base } = await setUp();
    const token = (client as unknown as { callbackToken: string }).callbackToken;
    const post = (body: Record<string, unknown>) =>
      fetch(`${base}/tasks/${crypto.randomUUID()}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ session_id: 'c-9', ...body }),
      });
    for (const body of [
      { status: 'typing', label: 'thinking' },
      { status: 'tool_call', label: 'search' },
      { status: 'message', message_id: 'm-1', reply_text: 'once' },
      { status: 'message', message_id: 'm-1', reply_text: 'once' },
      { status: 'completed' },
      { status: 'silent' },
    ]) {
      expect((await post(body)).status).toBe(200);
    }
    const { entries, typing } = client.conversation('c-9').getSnapshot().context;
    expect(entries.map((e) => e.kind)).toEqual(['tool_call', 'assistant']);
    expect(typing).toBeUndefined();
    expect((await post({ status: 'shouting' })).status).toBe(400);
  });

  it('the typing indicator goes away after its inactivity time without another typing', async () => {
    const agent = new HeldAgent();
    const { client, clock } = await setUp(200, agent);
    const store = client.conversation('c-2');
    const task = await client.send('c-2', 'hello');
    await waitFor('the agent to get the task', () => agent.has('c-2', task), { everyMs: 5 });
    const sink = agent.reply('c-2', task);
    await sink.typing('thinking');
    await eventually(
      'typing',
      () => store.getSnapshot().context.typing,
      (t) => t?.label === 'thinking',
    );
    clock.increment(199);
    expect(store.getSnapshot().context.typing?.label).toBe('thinking');
    clock.increment(1);
    expect(store.getSnapshot().context.typing).toBeUndefined();
    expect(store.getSnapshot().context.entries.filter((e) => e.kind === 'assistant')).toEqual([]);
    await sink.message('late');
    await eventually(
      'the reply',
      () => store.getSnapshot().context.entries,
      (e) => e.some((entry) => entry.kind === 'assistant'),
    );
  });

  it('refuses a wrong token and a path that is not a task UUID', async () => {
    const { base, client } = await setUp();
    const token = (client as unknown as { callbackToken: string }).callbackToken;
    const body = JSON.stringify({ session_id: 'c', status: 'message', message_id: 'm', reply_text: 'x' });
    const post = (path: string, token: string) =>
      fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
    expect((await post(`/tasks/${crypto.randomUUID()}`, 'wrong')).status).toBe(401);
    expect((await post('/tasks/not-a-uuid', token)).status).toBe(404);
    expect((await post(`/tasks/${crypto.randomUUID()}`, token)).status).toBe(200);
  });

  it('a session the client closed is answered session_ended, and ends at the host', async () => {
    const { client, host } = await setUp();
    await client.send('c-3', script({ message: 'hello' }));
    await eventually(
      'the reply',
      () => client.conversation('c-3').getSnapshot().context.entries,
      (e) => e.length === 2,
    );
    client.endSession('c-3');
    await client.send('c-3', script({ message: 'anyone?' })).catch(() => undefined);
    await eventually(
      'the host ending the session',
      () => host.host.session('c-3')?.state,
      (state) => state === 'ended',
    );
  });
});
