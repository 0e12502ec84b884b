/**
 * The reasoning channel as real processes over loopback (issue 9's full run): an integration created
 * with the CLI, the backend relay and the assistant plugin (builtin reasoner) as children, and a client
 * that probes the plugin's capabilities, runs a live analysis and a session summary, and reads each
 * result, valid for its purpose.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { CapabilityProfile } from '../../protocol/index.js';
import { runCli, started, useChildFolder } from '../support/child.js';
import { probeAnalyseSummarise } from '../support/backend.js';
import { request } from '../support/http.js';

const folder = useChildFolder();

it('creates an integration, runs backend and plugin, and probes, analyses and summarises through them', { timeout: 60_000 }, async () => {
  const dir = folder();
  const db = join(dir, 'backend.db');
  const created = await runCli(['backend', 'integration', 'create', '--db', db]);
  expect(created.code).toBe(0);
  const integration = JSON.parse(created.stdout) as { integration_id: string; relay_token: string; client_token: string };
  const tokenFile = join(dir, 'relay-token');
  writeFileSync(tokenFile, `${integration.relay_token}\n`, { mode: 0o600 });

  const { listening } = (
    await started(['backend', '--port', '0', '--db', db, '--token-file', join(dir, 'operator-token'), '--log-level', 'warn'])
  ).line as { listening: string };
  expect(
    (
      await started([
        'plugin',
        '--backend',
        listening,
        '--integration',
        integration.integration_id,
        '--relay-token-file',
        tokenFile,
        '--db',
        join(dir, 'plugin.db'),
        '--log-level',
        'warn',
      ])
    ).line,
  ).toMatchObject({ plugin: 'started', reasoner: 'builtin' });

  const base = `${listening}/api/v1/assistant/integrations/${integration.integration_id}`;
  await probeAnalyseSummarise(base, integration.client_token);

  // The same backend from the terminal: `job create --wait` prints the result, `job show` the job.
  const clientTokenFile = join(dir, 'client-token');
  writeFileSync(clientTokenFile, `${integration.client_token}\n`, { mode: 0o600 });
  const client = ['--backend', listening, '--integration', integration.integration_id, '--client-token-file', clientTokenFile];
  const probed = await runCli(['job', 'create', ...client, '--purpose', 'capability_probe', '--wait']);
  expect([probed.code, probed.stderr]).toEqual([0, expect.stringMatching(/: completed/)]);
  expect(CapabilityProfile.safeParse(JSON.parse(probed.stdout)).success).toBe(true);
  const jobId = /job (\S+): completed/.exec(probed.stderr)![1]!;
  // The same --job again is the same job, not a second run: its result is printed again.
  const again = await runCli(['job', 'create', ...client, '--purpose', 'capability_probe', '--job', jobId, '--wait']);
  expect([again.code, again.stdout]).toEqual([0, probed.stdout]);
  const shown = await runCli(['job', 'show', ...client, '--job', jobId]);
  expect([shown.code, JSON.parse(shown.stdout)]).toEqual([0, expect.objectContaining({ job_id: jobId, state: 'completed' })]);
  // The backend lists no jobs a start of an id could be found in: a usage error says so (replay --job takes one).
  const cut = await runCli(['job', 'show', ...client, '--job', jobId.slice(0, 8)]);
  expect([cut.code, cut.stderr]).toEqual([2, expect.stringContaining(`--job ${jobId.slice(0, 8)} is not a whole job_id (a UUID)`)]);
  // The probe's profile is now the integration's, and its plugin is online.
  const listed = await runCli(['integrations', ...client]);
  expect([listed.code, JSON.parse(listed.stdout)]).toEqual([
    0,
    [
      expect.objectContaining({
        integration_id: integration.integration_id,
        state: 'online',
        capability_profile: JSON.parse(probed.stdout),
      }),
    ],
  ]);
  // The operator token file was created on first use, 0600, and opens the admin routes.
  const operator = readFileSync(join(dir, 'operator-token'), 'utf8').trim();
  expect(statSync(join(dir, 'operator-token')).mode & 0o777).toBe(0o600);
  const all = await request(`${listening}/api/v1/admin/integrations`, { token: operator });
  expect(all).toMatchObject({ status: 200, body: { integrations: [{ integration_id: integration.integration_id, state: 'online' }] } });
  const refused = await runCli(['job', 'cancel', ...client, '--job', jobId]);
  expect([refused.code, refused.stderr]).toEqual([1, expect.stringMatching(/^assistant-relay job: the backend answered 409 job_settled/)]);
});

it('refuses an integration for a provider that is coming soon, with exit 2', async () => {
  const result = await runCli(['backend', 'integration', 'create', '--db', join(folder(), 'backend.db'), '--provider', 'a2a-bridge']);
  expect([result.code, result.stderr]).toEqual([2, expect.stringMatching(/coming soon/)]);
});
