/**
 * The client library's Form A against the real host over real HTTP (issue 11): a turn with progress; one
 * stream per session shared by pending tasks and closed after the last; a connection cut in the middle
 * of three pending tasks; a resync that names one of three; `recovery_complete: false` failing nothing;
 * a 429 whose `Retry-After` is honoured; refusals. The agent answers when the test says (HeldAgent), and
 * the client's waits (its backoffs, the 429's) are on a simulated clock: nothing here sleeps.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FormAClient } from '../../adapters/client/form-a.js';
import type { ClientTransition } from '../../adapters/client/form-a-options.js';
import type { TaskHandle } from '../../adapters/client/task.js';
import type { ReplySink } from '../../index.js';
import { HeldAgent } from '../model/held-agent.js';
import { SimulatedClock } from '../support/clock.js';
import { TOKEN, startHost } from '../support/host.js';
import { post, request } from '../support/http.js';
import { cuttableProxy } from '../support/proxy.js';
import { SseConnection } from '../support/sse.js';
import { eventually, waitFor } from '../support/wait.js';

/** The client's backoff: whatever jitter draws, the next try is due within this. */
const CAP_MS = 100;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(options: Parameters<typeof startHost>[0] = {}) {
  const agent = new HeldAgent();
  const host = await startHost({ agent, ...options });
  cleanups.push(() => host.cleanup());
  const proxy = await cuttableProxy(host.url);
  cleanups.push(() => proxy.close());
  const clock = new SimulatedClock();
  const streams: string[] = [];
  const steps: ClientTransition[] = [];
  const client = new FormAClient({
    url: proxy.url,
    token: TOKEN,
    clock,
    backoff: { baseMs: 20, capMs: CAP_MS },
    onStream: (_, state) => streams.push(state),
    inspect: (step) => steps.push(step),
  });
  cleanups.push(() => client.close());
  /** The agent's sink for a task, once the host has handed the task to it. */
  const run = async (task: TaskHandle): Promise<ReplySink> => {
    await waitFor(`the agent to get ${task.task_id}`, () => agent.has(task.session_id, task.task_id), { everyMs: 5 });
    return agent.reply(task.session_id, task.task_id);
  };
  /** Each stream state the client has told of, once there are `count` of them. */
  const told = async (count: number) => {
    await waitFor(`${count} stream states (${streams.join(', ')})`, () => streams.length >= count, { everyMs: 5 });
    return streams;
  };
  return { agent, host, proxy, clock, client, streams, steps, run, told };
}

const accepted = (tasks: readonly TaskHandle[]) =>
  waitFor('the host to accept the tasks', () => tasks.every((task) => task.state.value === 'pending'), { everyMs: 5 });

const textOf = async (task: TaskHandle) => {
  const reply = await task.reply;
  return reply.status === 'message' ? reply.reply_text : reply.status;
};

describe('client library, Form A', () => {
  it('a turn: progress as it comes, its one reply, and the stream closed once nothing is pending', async () => {
    const { client, clock, streams, run } = await setUp();
    const task = client.send('s-1', 'hello');
    const progress: string[] = [];
    task.onProgress((p) => progress.push(`${p.status}:${p.label}`));
    const sink = await run(task);
    await sink.typing('thinking');
    await sink.message('hello');
    expect(await textOf(task)).toBe('hello');
    expect(progress).toEqual(['typing:thinking']);
    expect(streams).toEqual(['open', 'closed']);
    expect(client.subscription('s-1')).toBeUndefined();
    expect(clock.pending).toBe(0);
  });

  it('one stream serves every pending task of a session; an approval is just another task', async () => {
    const { client, streams, run } = await setUp();
    const tasks = [client.send('s-1', 'a'), client.send('s-1', 'b'), client.send('s-1', '/approve')];
    const [a, b, approve] = await Promise.all(tasks.map(run));
    await b!.message('b');
    await a!.message('a');
    await approve!.message('approved');
    expect(await Promise.all(tasks.map(textOf))).toEqual(['a', 'b', 'approved']);
    expect(streams).toEqual(['open', 'closed']);
  });

  it('the connection cut in the middle of three pending tasks: every reply arrives, none twice', async () => {
    const { client, proxy, clock, streams, steps, run, told } = await setUp();
    const tasks = [0, 1, 2].map((i) => client.send('s-1', `task ${i}`));
    const sinks = await Promise.all(tasks.map(run));
    await accepted(tasks);
    await sinks[0]!.message('reply 0');
    expect(await textOf(tasks[0]!)).toBe('reply 0');
    proxy.cut();
    expect(await told(2)).toEqual(['open', 'waiting']);
    // Answered while the stream is down; the client is back only once its backoff has run out.
    await sinks[1]!.message('reply 1');
    await sinks[2]!.message('reply 2');
    expect(streams).toEqual(['open', 'waiting']);
    clock.increment(CAP_MS);
    expect(await Promise.all(tasks.map(textOf))).toEqual(['reply 0', 'reply 1', 'reply 2']);
    expect(streams).toEqual(['open', 'waiting', 'open', 'closed']);
    // The second stream resumed after reply 0: three reply ids in all, none read twice.
    expect(steps.filter((step) => step.event.type === 'reply.id')).toHaveLength(3);
    expect(clock.pending).toBe(0);
  });

  it('a resync that names one of three pending tasks fails exactly that one', async () => {
    const { agent, client, proxy, host, clock, streams, run, told } = await setUp();
    // A first turn gives the client a cursor.
    const first = client.send('s-1', 'first');
    await (await run(first)).message('first');
    expect(await textOf(first)).toBe('first');
    const keeper = client.send('s-1', 'keep the stream');
    const keeping = await run(keeper);
    await accepted([keeper]);
    proxy.refusingStreams = true;
    proxy.cut();
    expect(await told(4)).toEqual(['open', 'closed', 'open', 'waiting']);
    // While its stream is down, its three tasks are answered, and another client's large replies push the first one out of the backlog.
    const tasks = [client.send('s-1', 'one'), client.send('s-1', 'two'), client.send('s-1', 'three')];
    const sinks = await Promise.all(tasks.map(run));
    await accepted(tasks);
    await sinks[0]!.message('x'.repeat(100_000));
    for (const i of [1, 2, 3, 4]) {
      expect((await post(host.url, TOKEN, { session_id: 's-1', task_id: `other-${i}`, text: 'large' })).status).toBe(202);
      await waitFor(`the agent to get other-${i}`, () => agent.has('s-1', `other-${i}`), { everyMs: 5 });
      await agent.reply('s-1', `other-${i}`).message('x'.repeat(250_000));
    }
    await sinks[1]!.message('kept 1');
    await sinks[2]!.message('kept 2');
    // A try while streams are still refused fails, and waits again.
    clock.increment(CAP_MS);
    expect(await told(5)).toEqual(['open', 'closed', 'open', 'waiting', 'waiting']);
    expect(tasks.map((task) => task.state.value)).toEqual(['pending', 'pending', 'pending']);
    proxy.refusingStreams = false;
    clock.increment(CAP_MS);
    const settled = await Promise.allSettled(tasks.map(textOf));
    expect(settled[0]).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ kind: 'lost' }) });
    expect(settled.slice(1)).toEqual([
      { status: 'fulfilled', value: 'kept 1' },
      { status: 'fulfilled', value: 'kept 2' },
    ]);
    await keeping.message('kept the stream');
    expect(await textOf(keeper)).toBe('kept the stream');
    expect(streams.slice(5)).toEqual(['open', 'closed']);
  });

  it("a session's cursor outlives its stream: the next stream resumes from it", async () => {
    const { client, streams, run } = await setUp();
    const one = client.send('s-1', 'one');
    await (await run(one)).message('one');
    expect(await textOf(one)).toBe('one');
    expect(client.cursor('s-1')).toMatch(/^[0-9a-z]+:[0-9a-z]+:1$/);
    const two = client.send('s-1', 'two');
    await (await run(two)).message('two');
    expect(await textOf(two)).toBe('two');
    expect(client.cursor('s-1')).toMatch(/:2$/);
    expect(streams).toEqual(['open', 'closed', 'open', 'closed']);
  });

  it('a stream dropped before any reply catches up with recovery_complete false, and fails nothing it was not told of', async () => {
    const { client, proxy, clock, steps, run, told } = await setUp();
    const tasks = [client.send('s-1', 'one'), client.send('s-1', 'two')];
    const sinks = await Promise.all(tasks.map(run));
    await accepted(tasks);
    proxy.refusing = true;
    proxy.cut();
    await told(2);
    await sinks[0]!.message('one');
    // The network is still down at the first try.
    clock.increment(CAP_MS);
    expect(await told(3)).toEqual(['open', 'waiting', 'waiting']);
    proxy.refusing = false;
    clock.increment(CAP_MS);
    expect(await textOf(tasks[0]!)).toBe('one');
    // The resync (recovery_complete false: the client had no cursor) did not name the task still open: it stays pending.
    await waitFor('the resync frame', () => steps.some((step) => step.event.type.startsWith('resync.')), { everyMs: 5 });
    expect(steps.filter((step) => step.event.type.startsWith('resync.')).map((step) => step.event.type)).toEqual(['resync.unlisted']);
    expect(tasks[1]!.state.value).toBe('pending');
    await sinks[1]!.message('two');
    expect(await textOf(tasks[1]!)).toBe('two');
  });

  it('a 429 is honoured: the next try waits its Retry-After', async () => {
    const { client, host, clock, streams, run, told } = await setUp({ maxReadersPerSession: 1 });
    // The session is known to the host (its readers can be counted), and its one reader's place is taken.
    expect((await post(host.url, TOKEN, { session_id: 's-1', task_id: 'opening', text: 'hello' })).status).toBe(202);
    const other = await SseConnection.open(`${host.url}/v1/events?session_id=s-1`, { token: TOKEN });
    expect(other.status).toBe(200);
    const task = client.send('s-1', 'after the wait');
    expect(await told(1)).toEqual(['waiting']);
    const refusedAt = clock.now();
    expect(client.subscription('s-1')?.context.retry_at).toBe(refusedAt + 1_000);
    other.close();
    const readers = async () => ((await request(`${host.url}/v1/sessions/s-1`, { token: TOKEN })).body as { readers: number }).readers;
    await eventually('the other reader to leave', readers, (n) => n === 0, { everyMs: 5 });
    clock.increment(999);
    expect(client.subscription('s-1')?.value).toBe('waiting');
    clock.increment(1);
    await (await run(task)).message('after the wait');
    expect(await textOf(task)).toBe('after the wait');
    expect(streams).toEqual(['waiting', 'open', 'closed']);
  });

  it('a wrong token fails the task as refused; a session that ended refuses new tasks', async () => {
    const { host, run } = await setUp();
    const clock = new SimulatedClock();
    const wrong = new FormAClient({ url: host.url, token: 'not-the-token', clock });
    cleanups.push(() => wrong.close());
    await expect(wrong.send('s-1', 'hi').reply).rejects.toMatchObject({ kind: 'refused', reason: 'unauthorized' });
    const right = new FormAClient({ url: host.url, token: TOKEN, clock });
    cleanups.push(() => right.close());
    const bye = right.send('s-2', 'bye');
    const sink = await run(bye);
    await sink.message('bye');
    await sink.endSession();
    expect(await textOf(bye)).toBe('bye');
    const late = right.send('s-2', 'anyone there?');
    await expect(late.reply).rejects.toMatchObject({ kind: 'refused', reason: 'session_ended' });
    expect(clock.pending).toBe(0);
  });
});
