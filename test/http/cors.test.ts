/**
 * CORS, for browser clients: the host and the backend answer a preflight, and mark their answers, for
 * the origins an operator lists, and for no other; with none listed, nothing cross-origin is allowed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { serveBackend } from '../support/backend.js';
import { TOKEN, startHost } from '../support/host.js';
import { script } from '../support/http.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const APP = 'http://app.example:5173';
const preflight = (url: string, origin: string, method = 'GET', headers = 'authorization,last-event-id') =>
  fetch(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });

describe('CORS', () => {
  it("the host answers a listed origin's preflight and marks its answers; another origin gets neither", async () => {
    const host = await startHost({ corsOrigins: [APP] });
    cleanups.push(() => host.cleanup());
    const ok = await preflight(`${host.url}/v1/events?session_id=s`, APP);
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe(APP);
    expect(ok.headers.get('access-control-allow-headers')).toContain('last-event-id');
    const post = await preflight(`${host.url}/v1/incoming`, APP, 'POST', 'authorization,content-type');
    expect([post.status, post.headers.get('access-control-allow-methods')]).toEqual([204, 'GET, POST']);
    const answer = await fetch(`${host.url}/v1/incoming`, {
      method: 'POST',
      headers: { origin: APP, authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ session_id: 's', task_id: 't', text: script({ message: 'hi' }) }),
    });
    expect([answer.status, answer.headers.get('access-control-allow-origin')]).toEqual([202, APP]);
    // The stream too, though it is written past fastify's reply.
    const stream = await fetch(`${host.url}/v1/events?session_id=s`, { headers: { origin: APP, authorization: `Bearer ${TOKEN}` } });
    expect([stream.status, stream.headers.get('access-control-allow-origin')]).toEqual([200, APP]);
    await stream.body?.cancel();
    const other = await preflight(`${host.url}/v1/events?session_id=s`, 'http://evil.example');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('with no origin listed, the host lets no cross-origin browser request through', async () => {
    const host = await startHost();
    cleanups.push(() => host.cleanup());
    const answer = await preflight(`${host.url}/v1/events?session_id=s`, APP);
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(answer.status).toBeLessThan(500);
  });

  it("the backend answers a listed origin's preflight for the client routes", async () => {
    const backend = await serveBackend({ corsOrigins: [APP] });
    cleanups.push(() => backend.stop());
    const answer = await preflight(
      `${backend.url}/api/v1/assistant/integrations/00000000-0000-4000-8000-000000000000/jobs`,
      APP,
      'POST',
      'authorization,content-type',
    );
    expect([answer.status, answer.headers.get('access-control-allow-origin')]).toEqual([204, APP]);
  });
});
