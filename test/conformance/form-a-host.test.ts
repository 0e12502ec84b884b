/**
 * The conformance kit against Form A hosts (issue 27): green against ours, and red against each broken
 * variant (ours behind a proxy that breaks one rule), with the check of that rule failing and only it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FORM_A_HOST_CHECKS, type FormAHostContext } from '../../adapters/conformance/form-a-host.js';
import { runChecks, type Selection } from '../../adapters/conformance/runner.js';
import { Target } from '../../adapters/conformance/target.js';
import { breakingProxy, forgetsOpen, namesUnlistedLost, replaysOneTooFew, type StreamFault } from '../support/breaking-proxy.js';
import { TOKEN, startHost, type TestHost } from '../support/host.js';

const KEEPALIVE_MS = 300;
let host: TestHost;

beforeAll(async () => {
  host = await startHost({ agent: 'script', keepaliveMs: KEEPALIVE_MS });
});
afterAll(async () => {
  await host.cleanup();
});

const contextAt = (url: string): FormAHostContext => ({
  target: new Target(new URL(url), 10_000),
  token: TOKEN,
  run: `kit-test-${Math.random().toString(36).slice(2, 8)}`,
  keepaliveMs: KEEPALIVE_MS,
  maxReaders: 8,
  replyMs: 10_000,
});
const selection = (only?: string[]): Selection => ({
  ...(only === undefined ? {} : { only }),
  has: new Set(['script-agent']),
  timeoutMs: 30_000,
});

it('passes every Form A check against our host', { timeout: 120_000 }, async () => {
  const results = await runChecks(FORM_A_HOST_CHECKS, contextAt(host.url), selection());
  expect(results.filter((result) => result.outcome !== 'passed')).toEqual([]);
  expect(results.length).toBeGreaterThanOrEqual(12);
});

describe.each<[string, StreamFault, string, string, string[]]>([
  ['forgets `: open`', forgetsOpen, 'form-a.open', '4.2 GET /v1/events rule 5', ['form-a.open']],
  // A replay short of one, or a resync that names a replayed task, breaks 2.7's rule past retention too.
  [
    'replays one reply too few after a cursor',
    replaysOneTooFew,
    'form-a.resume',
    '4.2 GET /v1/events rule 7',
    ['form-a.resume', 'form-a.resync'],
  ],
  [
    'names a task lost that was not evicted',
    namesUnlistedLost,
    'form-a.resume',
    '4.2 GET /v1/events rule 7',
    ['form-a.resume', 'form-a.resync'],
  ],
])('a host that %s', (_what, fault, failing, rule, failingOnly) => {
  it(`fails ${failing}, naming ${rule}, and no check of another rule`, { timeout: 120_000 }, async () => {
    const proxy = await breakingProxy(host.url, fault);
    try {
      const results = await runChecks(FORM_A_HOST_CHECKS, contextAt(proxy.url), selection());
      const failed = results.filter((result) => result.outcome === 'failed');
      expect(failed.map((result) => [result.id, result.spec])).toContainEqual([failing, rule]);
      expect(failed.map((result) => result.id)).toEqual(failingOnly);
    } finally {
      await proxy.close();
    }
  });
});
