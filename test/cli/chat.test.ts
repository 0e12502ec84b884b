/**
 * The terminal chat's session (`openChat`, what `assistant-relay chat` runs) against a real host through a
 * proxy, its waits on a simulated clock: a drop while nothing is pending is told when it happens, and the
 * stream's return once its backoff has run out; a host it cannot reach at first, and one that refuses it.
 */
import { afterEach, expect, it } from 'vitest';
import { openChat, textOf } from '../../adapters/cli/chat.js';
import { SimulatedClock } from '../support/clock.js';
import { TOKEN, startHost } from '../support/host.js';
import { cuttableProxy } from '../support/proxy.js';
import { eventually, waitFor } from '../support/wait.js';

/** Past any first backoff (250 ms at most). */
const BACKOFF_MS = 250;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp({ token = TOKEN, refusing = false } = {}) {
  const host = await startHost();
  cleanups.push(() => host.cleanup());
  const proxy = await cuttableProxy(host.url);
  proxy.refusing = refusing;
  cleanups.push(() => proxy.close());
  const clock = new SimulatedClock();
  const screen: string[] = [];
  const chat = openChat({ url: proxy.url, token, session: 's-1', clock, show: (kind, fields) => screen.push(textOf(kind, fields)) });
  cleanups.push(() => chat.end());
  const shown = (line: string) =>
    eventually(
      `"${line}" on the screen`,
      () => [...screen],
      (lines) => lines.includes(line),
      { everyMs: 5 },
    );
  return { proxy, clock, screen, chat, shown };
}

it('an idle chat says when its stream drops, at once, and when it is back', async () => {
  const { proxy, clock, chat, shown } = await setUp();
  chat.say('hello');
  await shown('assistant: hello');
  // Nothing is pending now; the chat still holds its stream, so a cut is seen before any time passes.
  proxy.cut();
  const dropped = await shown('  (connection lost: reconnecting…)');
  expect(dropped).toEqual(['  … thinking', 'assistant: hello', '  (connection lost: reconnecting…)']);
  clock.increment(BACKOFF_MS);
  await shown('  (reconnected)');
  chat.say('still here?');
  expect((await shown('assistant: still here?')).slice(3)).toEqual(['  (reconnected)', '  … thinking', 'assistant: still here?']);
});

it('a chat that cannot reach its host at first says so, and says when it can', async () => {
  const { proxy, clock, screen, shown } = await setUp({ refusing: true });
  await shown('  (cannot reach the host: trying again…)');
  // A try that fails again says nothing more.
  clock.increment(BACKOFF_MS);
  await waitFor('a second try', () => clock.pending === 1, { everyMs: 5 });
  proxy.refusing = false;
  clock.increment(2 * BACKOFF_MS);
  expect(await shown('  (connected)')).toEqual(['  (cannot reach the host: trying again…)', '  (connected)']);
  expect(screen).toHaveLength(2);
});

it('a chat the host refuses says why', async () => {
  const { shown } = await setUp({ token: 'not-the-token' });
  expect(await shown('  ! error unauthorized: a valid Authorization: Bearer token is required')).toHaveLength(1);
});
