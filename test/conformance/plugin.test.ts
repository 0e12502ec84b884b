/**
 * The conformance kit against assistant plugins (issue 27), the kit playing their backend: every check
 * passes against ours; against ours behind a proxy that makes it run a finished job again, or start a
 * job past its deadline, the check of that rule fails naming it.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runRole, type KitOptions, type PluginBackend } from '../../adapters/conformance/kit.js';
import { builtinReasoner, pairAsAssistant, startPlugin } from '../../index.js';
import { keyringOf } from '../../protocol/byo/index.js';
import { breakingProxy, runsFinishedJobAgain, startsPastDeadline, type StreamFault } from '../support/breaking-proxy.js';
import { tempDir } from '../support/host.js';

/** Our plugin against the kit's backend, behind a proxy that breaks one rule when `fault` is given. */
const ours =
  (fault?: (backend: string) => StreamFault) =>
  async (kit: PluginBackend): Promise<() => Promise<void>> => {
    const dir = tempDir();
    const proxy = fault === undefined ? undefined : await breakingProxy(kit.url, fault(kit.url));
    const plugin = await startPlugin({
      backendUrl: proxy?.url ?? kit.url,
      integrationId: kit.integrationId,
      relayToken: kit.relayToken,
      reasoner: builtinReasoner({ providerKind: 'assistant-relay' }),
      db: join(dir, 'plugin.db'),
      providerKind: 'assistant-relay',
    });
    return async () => {
      await plugin.stop();
      await proxy?.close();
      rmSync(dir, { recursive: true, force: true });
    };
  };

const options = (start: NonNullable<KitOptions['plugin']>['start'], byo = false): KitOptions => ({
  has: new Set(byo ? ['byo'] : []),
  checkTimeoutMs: 30_000,
  replyMs: 10_000,
  keepaliveMs: 20_000,
  maxReaders: 8,
  plugin: { providerKind: 'assistant-relay', start },
});

it('passes every plugin check against ours', { timeout: 120_000 }, async () => {
  const results = await runRole('plugin', options(ours()));
  expect(results.filter((result) => result.outcome === 'failed')).toEqual([]);
  expect(results.filter((result) => result.outcome === 'passed').length).toBeGreaterThanOrEqual(7);
  // A plugin not paired takes plain jobs: the BYO checks are skipped, saying why.
  expect(results.filter((result) => result.outcome === 'skipped').map((result) => [result.id, result.reason])).toEqual([
    ['plugin.pairs', 'needs --byo'],
    ['plugin.byo-bound', 'needs --byo'],
    ['plugin.byo-only', 'needs --byo'],
  ]);
});

/** Our plugin paired with the kit by its code (the assistant's side, saying yes to the short string), then taking BYO jobs. */
async function oursPaired(kit: PluginBackend): Promise<() => Promise<void>> {
  const dir = tempDir();
  const paired = await pairAsAssistant({ backend: kit.url, code: kit.pairingCode!, confirmSas: async () => true, pollMs: 50 });
  const plugin = await startPlugin({
    backendUrl: kit.url,
    integrationId: paired.integration_id,
    relayToken: paired.token,
    reasoner: builtinReasoner({ providerKind: 'assistant-relay' }),
    db: join(dir, 'plugin.db'),
    providerKind: 'assistant-relay',
    keys: keyringOf([paired.keys]),
  });
  return async () => {
    await plugin.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}

it('passes every plugin check, BYO ones too, against ours paired with the kit', { timeout: 120_000 }, async () => {
  const results = await runRole('plugin', options(oursPaired, true));
  expect(results.filter((result) => result.outcome !== 'passed')).toEqual([]);
  expect(results.map((result) => result.id)).toEqual(expect.arrayContaining(['plugin.pairs', 'plugin.byo-bound', 'plugin.byo-only']));
});

describe.each<[string, (backend: string) => StreamFault, string, string, string[]]>([
  // Running a job each time it comes is what a redelivery after a drop may catch too: when the first
  // frame reached the plugin before the kit cut its stream.
  [
    'runs a finished job again',
    runsFinishedJobAgain,
    'plugin.runs-once',
    'PROTOCOL.md 6d.3',
    ['plugin.redelivered-after-drop', 'plugin.runs-once'],
  ],
  ['starts a job past its deadline', () => startsPastDeadline, 'plugin.past-deadline', '2.1 deadline_at', ['plugin.past-deadline']],
])('a plugin that %s', (_what, fault, failing, rule, mayFail) => {
  it(`fails ${failing}, naming ${rule}, and no check of another rule`, { timeout: 120_000 }, async () => {
    const results = await runRole('plugin', options(ours(fault)));
    const failed = results.filter((result) => result.outcome === 'failed');
    expect(failed.map((result) => [result.id, result.spec])).toContainEqual([failing, rule]);
    for (const result of failed) expect(mayFail).toContain(result.id);
  });
});
