/**
 * The inspector's page in Debian's headless Chromium (playwright-core, no downloaded browser), on a
 * running host with `inspect: true`: it lists the session, shows its statechart with its state lit, follows
 * a turn the test sends (the task's lit state moves on as it is answered) and the session's end, and
 * scrubbing back shows an earlier state. A screenshot is left in test/artifacts/ for a person to look at.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterEach, expect, it } from 'vitest';
import type { Agent } from '../../index.js';
import { TOKEN, startHost } from '../support/host.js';
import { post } from '../support/http.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Answers each turn only when the test lets it: the task stays pending until then. */
function gatedAgent() {
  const gates = new Map<string, () => void>();
  const waiting = new Map<string, Promise<void>>();
  const gate = (taskId: string) => {
    if (!waiting.has(taskId)) waiting.set(taskId, new Promise<void>((resolve) => gates.set(taskId, resolve)));
    return waiting.get(taskId)!;
  };
  const agent: Agent = {
    name: 'gated',
    async respond(turn, reply) {
      await reply.typing('thinking');
      await gate(turn.task_id);
      await reply.message(`answered ${turn.text}`);
    },
  };
  return {
    agent,
    release: (taskId: string) => {
      void gate(taskId);
      gates.get(taskId)!();
    },
  };
}

/** The data-state of every lit group of the chart, in document order. */
const lit = (tab: Page) => tab.$$eval('#chart [data-state].current', (nodes) => nodes.map((node) => node.getAttribute('data-state')));

it('lists a running host’s session, lights its state, follows a turn live, and scrubs back', { timeout: 60_000 }, async () => {
  const { agent, release } = gatedAgent();
  const host = await startHost({ agent, inspect: true });
  cleanups.push(() => host.cleanup());
  expect((await post(host.url, TOKEN, { session_id: 'chat', task_id: 't1', text: 'one' })).status).toBe(202);
  release('t1');

  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  cleanups.push(() => browser.close());
  const tab = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  const problems: string[] = [];
  tab.on('pageerror', (error) => problems.push(error.message));
  tab.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
  await tab.goto(host.host.inspectorUrl!);

  // The list, and the session's statechart with `open` lit.
  const session = tab.locator('li[data-key="session::chat"]');
  await expect.poll(() => session.locator('.state').textContent()).toBe('open');
  await session.click();
  await expect.poll(() => lit(tab)).toEqual(['open']);
  expect(await tab.locator('#entry-type').textContent()).toMatch(/^(session\.opened|task\.\w+)$/);

  // A turn the agent holds: the task appears live, pending; chosen, its chart lights `pending`.
  expect((await post(host.url, TOKEN, { session_id: 'chat', task_id: 't2', text: 'two' })).status).toBe(202);
  const task = tab.locator('li[data-key="task:chat:t2"]');
  await expect.poll(() => task.locator('.state').textContent(), { timeout: 10_000 }).toBe('pending');
  // Known by its words, its ids beneath.
  expect([await task.locator('.id').textContent(), await task.locator('.name').textContent()]).toEqual(['“two”', 'chat / t2']);
  await task.click();
  await expect.poll(() => lit(tab)).toEqual(['pending']);

  // Answered: the picture follows without a click, to the newest entry.
  release('t2');
  await expect.poll(() => lit(tab), { timeout: 10_000 }).toEqual(['settled']);
  expect(await tab.locator('#entry-state').textContent()).toBe('settled (message)');
  expect(await tab.locator('#entry-type').textContent()).toBe('task.settled');
  expect(await tab.locator('#entry-says').textContent()).toBe('“answered two”');
  const entries = Number(await tab.locator('#scrubber').getAttribute('max')) + 1;
  expect(entries).toBe(3);

  // Scrubbing back: the first entry, task.started, and `pending` lit again.
  await tab.locator('#prev').click();
  await tab.locator('#scrubber').fill('0');
  await expect.poll(() => lit(tab)).toEqual(['pending']);
  expect(await tab.locator('#entry-type').textContent()).toBe('task.started');
  expect(await tab.locator('#count').textContent()).toBe(`1 / ${entries}`);
  mkdirSync(ARTIFACTS, { recursive: true });
  await tab.screenshot({ path: `${ARTIFACTS}inspector.png`, fullPage: true });
  await tab.locator('#next').click();
  expect(await tab.locator('#entry-type').textContent()).toBe('task.progressed');

  // The session ends: chosen again, its chart follows from `open` to `ended`.
  await session.click();
  await expect.poll(() => lit(tab)).toEqual(['open']);
  await host.host.endSession('chat');
  await expect.poll(() => lit(tab), { timeout: 10_000 }).toEqual(['ended']);
  await expect.poll(() => session.locator('.state').textContent()).toMatch(/^ended/);

  // The filter keeps what matches: an id, or words.
  const keys = () => tab.locator('li[data-key]').evaluateAll((items) => items.map((item) => item.getAttribute('data-key')));
  await tab.locator('#filter').fill('t2');
  expect(await keys()).toEqual(['task:chat:t2']);
  await tab.locator('#filter').fill('TWO');
  expect(await keys()).toEqual(['task:chat:t2']);
  expect(problems).toEqual([]);
});
