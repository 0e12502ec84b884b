/** The conformance kit against our Form B host (issue 27): every check passes, the kit playing the client's callback listener. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runRole } from '../../adapters/conformance/kit.js';
import { TOKEN, startHost, type TestHost } from '../support/host.js';

let host: TestHost;

beforeAll(async () => {
  host = await startHost({ agent: 'script', form: 'B' });
});
afterAll(async () => {
  await host.cleanup();
});

it('passes every Form B check against our host', { timeout: 120_000 }, async () => {
  const results = await runRole('form-b-host', {
    url: new URL(host.url),
    token: TOKEN,
    has: new Set(['script-agent']),
    checkTimeoutMs: 30_000,
    replyMs: 10_000,
    keepaliveMs: 20_000,
    maxReaders: 8,
  });
  expect(results.filter((result) => result.outcome !== 'passed')).toEqual([]);
  expect(results.map((result) => result.id)).toContain('form-b.retried');
});
