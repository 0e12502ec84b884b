/**
 * The client library's Form A against the real host over real HTTP (issue 11): a turn with progress; one
 * stream per session shared by pending tasks and closed after the last; a connection cut in the middle
 * of three pending tasks; a resync that names one of three; `recovery_complete: false` failing nothing;
 * a 429 whose `Retry-After` is honoured; refusals.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FormAClient, TaskFailed, type TaskHandle } from '../../adapters/client/form-a.js';
import { cuttableProxy, type CuttableProxy } from '../support/proxy.js';
import { TOKEN, startHost, type TestHost } from '../support/host.js';
import { script } from '../support/http.js';
import { SseConnection } from '../support/sse.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(options: Parameters<typeof startHost>[0] = {}): Promise<{ host: TestHost; proxy: CuttableProxy; client: FormAClient; streams: string[] }> {
  const host = await startHost(options);
  cleanups.push(() => host.cleanup());
  const proxy = await cuttableProxy(host.url);
  cleanups.push(() => proxy.close());
  const streams: string[] = [];
  const client = new FormAClient({ url: proxy.url, token: TOKEN, backoff: { baseMs: 20, capMs: 100 }, onStream: (_, state) => streams.push(state) });
  cleanups.push(() => client.close());
  return { host, proxy, client, streams };
}

const textOf = async (task: TaskHandle) => {
  const reply = await task.reply;
  return reply.status === 'message' ? reply.reply_text : reply.status;
};

describe('client library, Form A', () => {
  it('a turn: progress as it comes, its one reply, and the stream closed once nothing is pending', async () => {
    const { client, streams } = await setUp();
    const task = client.send('s-1', script({ typing: 'thinking' }, { message: 'hello' }));
    const progress: string[] = [];
    task.onProgress((p) => progress.push(`${p.status}:${p.label}`));
    expect(await textOf(task)).toBe('hello');
    expect(progress).toEqual(['typing:thinking']);
    expect(streams).toEqual(['open', 'closed']);
    expect(client.subscription('s-1')).toBeUndefined();
  });

  it('one stream serves every pending task of a session; an approval is just another task', async () => {
    const { client, streams } = await setUp();
    const tasks = [client.send('s-1', script({ sleep: 150 }, { message: 'a' })), client.send('s-1', script({ sleep: 50 }, { message: 'b' })), client.send('s-1', '/approve')];
    expect(await Promise.all(tasks.map(textOf))).toEqual(['a', 'b', '/approve']);
    expect(streams).toEqual(['open', 'closed']);
  });

  it('the connection cut in the middle of three pending tasks: every reply arrives, none twice', async () => {
    const { client, proxy, streams } = await setUp();
    const tasks = [100, 600, 900].map((ms, i) => client.send('s-1', script({ sleep: ms }, { message: `reply ${i}` })));
    expect(await textOf(tasks[0]!)).toBe('reply 0');
    proxy.cut();
    expect(await Promise.all(tasks.map(textOf))).toEqual(['reply 0', 'reply 1', 'reply 2']);
    expect(streams.filter((s) => s === 'open').length).toBe(2);
    expect(streams.at(-1)).toBe('closed');
  });

  it('a resync that names one of three pending tasks fails exactly that one', async () => {
    const { client, proxy, host } = await setUp();
    // A first turn gives the client a cursor.
    expect(await textOf(client.send('s-1', script({ message: 'first' })))).toBe('first');
    const keeper = client.send('s-1', script({ sleep: 4_000 }, { message: 'kept the stream' }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    proxy.refusingStreams = true;
    proxy.cut();
    // While its stream is down, its three tasks are answered, and another client's large replies push the first one out of the backlog.
    const tasks = [
      client.send('s-1', script({ message_bytes: 100_000 })),
      client.send('s-1', script({ sleep: 700 }, { message: 'kept 1' })),
      client.send('s-1', script({ sleep: 800 }, { message: 'kept 2' })),
    ];
    const other = new FormAClient({ url: host.url, token: TOKEN });
    cleanups.push(() => other.close());
    await new Promise((resolve) => setTimeout(resolve, 200));
    await Promise.all([1, 2, 3, 4].map((i) => other.send('s-1', script({ sleep: 100 * i }, { message_bytes: 250_000 })).reply));
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(tasks.map((task) => task.state.value)).toEqual(['pending', 'pending', 'pending']);
    proxy.refusingStreams = false;
    const settled = await Promise.allSettled(tasks.map(textOf));
    expect(settled[0]).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ kind: 'lost' }) });
    expect(settled.slice(1)).toEqual([{ status: 'fulfilled', value: 'kept 1' }, { status: 'fulfilled', value: 'kept 2' }]);
    expect(await textOf(keeper)).toBe('kept the stream');
  });

  it('a session\'s cursor outlives its stream: the next stream resumes from it', async () => {
    const { client, streams } = await setUp();
    expect(await textOf(client.send('s-1', script({ message: 'one' })))).toBe('one');
    expect(client.cursor('s-1')).toMatch(/^[0-9a-z]+:[0-9a-z]+:1$/);
    expect(await textOf(client.send('s-1', script({ message: 'two' })))).toBe('two');
    expect(client.cursor('s-1')).toMatch(/:2$/);
    expect(streams).toEqual(['open', 'closed', 'open', 'closed']);
  });

  it('a stream dropped before any reply catches up with recovery_complete false, and fails nothing it was not told of', async () => {
    const { client, proxy } = await setUp();
    const tasks = [client.send('s-1', script({ sleep: 300 }, { message: 'one' })), client.send('s-1', script({ sleep: 300 }, { message: 'two' }))];
    await new Promise((resolve) => setTimeout(resolve, 100));
    proxy.refusing = true;
    proxy.cut();
    await new Promise((resolve) => setTimeout(resolve, 600));
    proxy.refusing = false;
    expect(await Promise.all(tasks.map(textOf))).toEqual(['one', 'two']);
  });

  it('a 429 is honoured: the next try waits its Retry-After', async () => {
    const { client, host } = await setUp({ maxReadersPerSession: 1 });
    const other = await SseConnection.open(`${host.url}/v1/events?session_id=s-1`, { token: TOKEN });
    expect(other.status).toBe(200);
    const times: Array<[string, number]> = [];
    const timed = new FormAClient({ url: host.url, token: TOKEN, onStream: (_, state) => times.push([state, Date.now()]) });
    cleanups.push(() => timed.close());
    const task = timed.send('s-1', script({ message: 'after the wait' }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    other.close();
    expect(await textOf(task)).toBe('after the wait');
    const waiting = times.find(([state]) => state === 'waiting')![1];
    const open = times.find(([state]) => state === 'open')![1];
    expect(open - waiting).toBeGreaterThanOrEqual(950);
    void client;
  });

  it('a wrong token fails the task as refused; a session that ended refuses new tasks', async () => {
    const { host } = await setUp();
    const wrong = new FormAClient({ url: host.url, token: 'not-the-token' });
    cleanups.push(() => wrong.close());
    await expect(wrong.send('s-1', 'hi').reply).rejects.toMatchObject({ kind: 'refused', reason: 'unauthorized' });
    const right = new FormAClient({ url: host.url, token: TOKEN });
    cleanups.push(() => right.close());
    expect(await textOf(right.send('s-2', script({ message: 'bye' }, { end_session: true })))).toBe('bye');
    const late = right.send('s-2', 'anyone there?');
    await expect(late.reply).rejects.toBeInstanceOf(TaskFailed);
    await expect(late.reply).rejects.toMatchObject({ kind: 'refused', reason: 'session_ended' });
  });
});
