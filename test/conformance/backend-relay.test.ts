/**
 * The conformance kit against backend relays (issue 27): every check passes against ours; against ours
 * behind a proxy that sends settled jobs again on each new stream, the check of that rule fails naming it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runRole, type KitOptions } from '../../adapters/conformance/kit.js';
import type { NewIntegration } from '../../engine/reasoning/integrations.js';
import { serveBackend, type ServedBackend } from '../support/backend.js';
import { breakingProxy, redeliversSettled } from '../support/breaking-proxy.js';

let backend: ServedBackend;

beforeAll(async () => {
  backend = await serveBackend();
});
afterAll(async () => {
  await backend.stop();
});

/** A fresh integration: the kit's stream takes over whatever plugin an integration has. */
async function integration(): Promise<NonNullable<KitOptions['integration']>> {
  const created = (await backend.backend.integrations.create('assistant-relay')) as NewIntegration;
  return { id: created.integration_id, relayToken: created.relay_token, clientToken: created.client_token };
}

const options = async (url: string): Promise<KitOptions> => ({
  url: new URL(url),
  integration: await integration(),
  has: new Set(),
  checkTimeoutMs: 30_000,
  replyMs: 10_000,
  keepaliveMs: 20_000,
  maxReaders: 8,
});

it('passes every backend relay check against ours', { timeout: 120_000 }, async () => {
  const results = await runRole('backend', await options(backend.url));
  expect(results.filter((result) => result.outcome !== 'passed')).toEqual([]);
  expect(results.length).toBeGreaterThanOrEqual(10);
});

it(
  'fails backend.settled-not-redelivered, naming PROTOCOL.md 6e.1, against a backend that delivers a settled job again',
  { timeout: 120_000 },
  async () => {
    const proxy = await breakingProxy(backend.url, redeliversSettled());
    try {
      const results = await runRole('backend', await options(proxy.url));
      const failed = results.filter((result) => result.outcome === 'failed');
      expect(failed.map((result) => [result.id, result.spec])).toEqual([['backend.settled-not-redelivered', 'PROTOCOL.md 6e.1']]);
    } finally {
      await proxy.close();
    }
  },
);
