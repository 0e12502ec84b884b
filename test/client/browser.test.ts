/**
 * The client library in a real browser (issue 11): `assistant-relay/client` bundled for the browser by
 * esbuild (platform `browser`: a Node module anywhere in it fails the bundle), loaded by a page on
 * another origin, in Debian's headless Chromium, completes a Form A turn with resume against the host:
 * the Bearer header takes a CORS preflight, and the stream is cut while two tasks are pending.
 */
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import { afterEach, expect, it } from 'vitest';
import { cuttableProxy } from '../support/proxy.js';
import { TOKEN, startHost } from '../support/host.js';
import { script } from '../support/http.js';

const CHROMIUM = '/usr/bin/chromium';
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('runs a Form A turn with resume in headless Chromium, across origins', { timeout: 60_000 }, async () => {
  const bundle = await build({
    entryPoints: [fileURLToPath(new URL('../../client.ts', import.meta.url))],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
  });
  const page = createServer((request, response) => {
    if (request.url === '/client.js') response.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle.outputFiles[0]!.text);
    else
      response
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!doctype html><script type="module">import * as client from "/client.js"; window.client = client;</script>');
  });
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => (page as Server).close(() => resolve())));
  const pageOrigin = `http://127.0.0.1:${(page.address() as { port: number }).port}`;

  const host = await startHost({ corsOrigins: [pageOrigin] });
  cleanups.push(() => host.cleanup());
  const proxy = await cuttableProxy(host.url);
  cleanups.push(() => proxy.close());
  // Another port is another origin: every call of the page to the host is cross-origin.
  const hostUrl = proxy.url;

  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  cleanups.push(() => browser.close());
  const tab = await browser.newPage();
  const said: string[] = [];
  tab.on('console', (message) => said.push(message.text()));
  await tab.exposeFunction('cut', () => proxy.cut());
  await tab.goto(pageOrigin);
  await tab.waitForFunction(() => 'client' in globalThis);
  const replies = await tab.evaluate(
    async ({ url, token, texts }) => {
      const { FormAClient } = (globalThis as unknown as { client: typeof import('../../client.js') }).client;
      const streams: string[] = [];
      const client = new FormAClient({ url, token, backoff: { baseMs: 50, capMs: 200 }, onStream: (_, state) => streams.push(state) });
      const tasks = texts.map((text) => client.send('browser-session', text));
      const first = await tasks[0]!.reply;
      await (globalThis as unknown as { cut: () => Promise<void> }).cut();
      const rest = await Promise.all(tasks.slice(1).map((task) => task.reply));
      return { replies: [first, ...rest].map((reply) => (reply.status === 'message' ? reply.reply_text : reply.status)), streams };
    },
    {
      url: hostUrl,
      token: TOKEN,
      texts: [script({ sleep: 100 }, { message: 'first' }), script({ sleep: 1_000 }, { message: 'after the cut' })],
    },
  );
  expect(replies.replies, said.join('\n')).toEqual(['first', 'after the cut']);
  expect(replies.streams.filter((state) => state === 'open')).toHaveLength(2);
  expect(replies.streams.at(-1)).toBe('closed');
});
