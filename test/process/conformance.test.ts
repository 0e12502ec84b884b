/**
 * `assistant-relay conformance` as a person or a CI runs it (issue 27): against a `serve` child, green,
 * exit 0, in TAP; against the same host behind a proxy that drops `: open`, exit 1 and the rule named;
 * and a plugin started by the kit itself (`--plugin-command`), in JUnit XML, plain and paired (`--byo`).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { breakingProxy, forgetsOpen } from '../support/breaking-proxy.js';
import { CLI, ServeChild, runCli, useChildFolder } from '../support/child.js';

const folder = useChildFolder();

it('checks a host child: TAP and exit 0 when it conforms; exit 1 naming the rule when it does not', { timeout: 90_000 }, async () => {
  const dir = folder();
  const token = join(dir, 'token');
  writeFileSync(token, 'conformance-token\n', { mode: 0o600 });
  const host = await ServeChild.start([
    '--port',
    '0',
    '--db',
    join(dir, 'relay.db'),
    '--token-file',
    token,
    '--agent',
    'script',
    '--keepalive-ms',
    '300',
    '--log-level',
    'silent',
  ]);
  try {
    const kit = (url: string, ...args: string[]) =>
      runCli(['conformance', 'form-a-host', '--url', url, '--token-file', token, '--script-agent', '--keepalive-ms', '300', ...args]);
    const green = await kit(host.url, '--format', 'tap');
    expect([green.code, green.stderr]).toEqual([0, expect.stringMatching(/^\d+ passed, 0 failed, 0 skipped\n$/)]);
    expect(green.stdout).toMatch(/^TAP version 14\n1\.\.(\d+)\n/);
    expect(green.stdout).not.toContain('not ok');

    const proxy = await breakingProxy(host.url, forgetsOpen);
    try {
      const red = await kit(proxy.url, '--only', '4.2', '--skip', 'form-a.keep-alive');
      expect(red.code).toBe(1);
      expect(red.stdout).toContain(
        '✗ form-a.open  the stream is text/event-stream and begins with the comment `: open`  [4.2 GET /v1/events rule 5]',
      );
      expect(red.stdout).not.toContain('form-a.keep-alive');
    } finally {
      await proxy.close();
    }
  } finally {
    await host.stop('SIGTERM');
  }
});

it(
  'starts the plugin with --plugin-command, the RELAY_TOKEN in a private file, and checks it as its backend',
  { timeout: 90_000 },
  async () => {
    const dir = folder();
    const command = [process.execPath, CLI, 'plugin', '--backend', '{backend}', '--integration', '{integration}']
      .concat(['--relay-token-file', '{relay_token_file}', '--db', join(dir, 'plugin.db'), '--log-level', 'silent'])
      .join(' ');
    const ran = await runCli(['conformance', 'plugin', '--plugin-command', command, '--format', 'junit']);
    // Not paired: the three BYO checks are skipped, saying why.
    expect([ran.code, ran.stderr]).toEqual([0, expect.stringMatching(/^\d+ passed, 0 failed, 3 skipped\n$/)]);
    expect(ran.stdout).toMatch(/<testsuite name="plugin" tests="(\d+)" failures="0" errors="0" skipped="3"/);
    expect(ran.stdout).toContain('name="plugin.runs-once: a finished job delivered again is not run again');
  },
);

it('pairs with the plugin by --pairing-code and checks it with sealed jobs (--byo)', { timeout: 90_000 }, async () => {
  const dir = folder();
  const command = [process.execPath, CLI, 'plugin', '--backend', '{backend}', '--pairing-code', '{pairing_code}', '--yes']
    .concat(['--keys', join(dir, 'assistant-keys.json'), '--db', join(dir, 'plugin.db'), '--log-level', 'silent'])
    .join(' ');
  const ran = await runCli(['conformance', 'plugin', '--byo', '--plugin-command', command]);
  expect(ran.code, ran.stdout).toBe(0);
  expect(ran.stdout).toContain('✓ plugin.pairs ');
  expect(ran.stdout).toContain('✓ plugin.byo-bound ');
  expect(ran.stdout.trimEnd().split('\n').at(-1)).toMatch(/^\d+ passed, 0 failed, 0 skipped$/);
});

it('refuses, before it sends anything, a name that selects no check and an address it cannot advertise', async () => {
  const dir = folder();
  const token = join(dir, 'token');
  writeFileSync(token, 'conformance-token\n', { mode: 0o600 });
  // Port 9 (discard): were anything sent, nothing would answer; the usage error comes first.
  const typo = await runCli(['conformance', 'form-a-host', '--url', 'http://127.0.0.1:9', '--token-file', token, '--only', 'form-a.opne']);
  expect([typo.code, typo.stdout]).toEqual([2, '']);
  expect(typo.stderr).toContain('"form-a.opne" names no check of form-a-host');
  const anywhere = await runCli(['conformance', 'plugin', '--listen', '0.0.0.0:0']);
  expect([anywhere.code, anywhere.stdout]).toEqual([2, '']);
  expect(anywhere.stderr).toContain('not 0.0.0.0 or ::');
});
