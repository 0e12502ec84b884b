/**
 * What the CLI leaves on disk (issue 23, part 7): `serve`, `backend` (and `backend integration create`),
 * `plugin`, and `inspect` and `replay` reading their logs, all started with the umask at 0, so that only
 * their own code decides: every folder they make is 0700 and every file they write 0600, while they run
 * and after they stop. (`npm start`'s demo is held to the same in demo.test.ts.)
 */
import { chmodSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ServeChild, runCli, started, useChildFolder } from '../support/child.js';
import { post } from '../support/http.js';
import { modesUnder, notPrivate, withOpenUmask } from '../support/modes.js';

const folder = useChildFolder();

it('serve, backend, plugin, inspect and replay make only private folders and files, whatever the umask', { timeout: 60_000 }, async () => {
  const data = join(folder(), 'data');
  const backendDb = join(data, 'backend', 'backend.db');
  const hostDb = join(data, 'host', 'relay.db');

  const created = await withOpenUmask(() => runCli(['backend', 'integration', 'create', '--db', backendDb]));
  expect(created.code, created.stderr).toBe(0);
  const { integration_id, relay_token } = JSON.parse(created.stdout) as { integration_id: string; relay_token: string };
  // The test's own file, outside what is judged.
  const relayTokenFile = join(folder(), 'relay-token');
  writeFileSync(relayTokenFile, `${relay_token}\n`, { mode: 0o600 });

  const backend = await withOpenUmask(() =>
    started(['backend', '--port', '0', '--db', backendDb, '--token-file', join(data, 'backend', 'operator-token'), '--log-level', 'warn']),
  );
  const plugin = await withOpenUmask(() =>
    started([
      'plugin',
      '--backend',
      backend.line.listening as string,
      '--integration',
      integration_id,
      '--relay-token-file',
      relayTokenFile,
      '--db',
      join(data, 'plugin', 'plugin.db'),
      '--log-level',
      'warn',
    ]),
  );
  const host = await withOpenUmask(() => ServeChild.start(['--port', '0', '--db', hostDb, '--token-file', join(data, 'host', 'token')]));
  expect((await post(host.url, 'x', {})).status).toBe(401);
  const inspector = await withOpenUmask(() =>
    started(['inspect', '--port', '0', '--db', hostDb, '--token-file', join(data, 'inspector', 'token'), '--log-level', 'warn']),
  );

  expect(modesUnder(data).map(([path]) => path)).toEqual(
    expect.arrayContaining([
      '.',
      'backend',
      'backend/backend.db',
      'backend/backend.db-wal',
      'backend/backend.db.holder',
      'backend/operator-token',
      'plugin/plugin.db',
      'host/relay.db-shm',
      'host/token',
      'inspector/token',
    ]),
  );
  expect(notPrivate(data)).toEqual([]);

  for (const stopping of [inspector, plugin, backend]) {
    stopping.child.kill('SIGTERM');
    expect(await stopping.exited).toEqual({ code: 0, signal: null });
  }
  expect(await host.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  const replayed = await withOpenUmask(() => runCli(['replay', '--db', backendDb]));
  expect(replayed.code, replayed.stderr).toBe(0);
  expect(notPrivate(data)).toEqual([]);
});

it('the demo refuses a log file that others can read, saying what to run, and writes nothing to it', async () => {
  const data = join(folder(), 'data');
  mkdirSync(data, { mode: 0o700 });
  const log = join(data, 'demo.log');
  writeFileSync(log, '', { mode: 0o644 });
  chmodSync(log, 0o644);
  const run = await runCli(['demo', '--data', data]);
  expect([run.code, run.stderr]).toEqual([2, expect.stringContaining(`chmod 600 ${log}`)]);
  expect(statSync(log).size).toBe(0);
});
