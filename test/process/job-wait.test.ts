/**
 * `assistant-relay job create --wait` as a client sees it: it follows the job's event stream and says each
 * change on stderr as it happens, rides out a backend SIGKILLed and restarted under it (following again
 * from its last frame id), and prints the result once the job completes. The test plays the plugin over
 * HTTP, so that every state lasts until it moves the job on.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { storedKeys, writeKeysFile } from '../../storage/keys-file.js';
import { PURPOSES, jsonSchemaOf, seal, type JobView } from '../../protocol/index.js';
import { pair } from '../plugin/byo-fixture.js';
import { request } from '../support/http.js';
import { runCli, start, started, useChildFolder } from '../support/child.js';
import { waitFor } from '../support/wait.js';

const folder = useChildFolder();

it(
  'job create --wait says each change as it happens, follows again after a backend restart, and prints the result',
  { timeout: 60_000 },
  async () => {
    const dir = folder();
    const db = join(dir, 'backend.db');
    const integration = JSON.parse((await runCli(['backend', 'integration', 'create', '--db', db])).stdout) as {
      integration_id: string;
      relay_token: string;
      client_token: string;
    };
    const clientTokenFile = join(dir, 'client-token');
    writeFileSync(clientTokenFile, `${integration.client_token}\n`, { mode: 0o600 });
    const first = await started(['backend', '--port', '0', '--db', db, '--log-level', 'warn']);
    const listening = first.line.listening as string;
    const base = `${listening}/api/v1/assistant/integrations/${integration.integration_id}`;
    const job_id = randomUUID();
    writeFileSync(
      join(dir, 'payload.json'),
      JSON.stringify({ session_id: 's', transcript: [{ speaker: 'Ana', text: 'What is the budget?' }] }),
    );
    const waiting = start(
      [
        'job',
        'create',
        '--backend',
        listening,
        '--integration',
        integration.integration_id,
        '--client-token-file',
        clientTokenFile,
        '--purpose',
        'live_analysis',
        '--payload',
        join(dir, 'payload.json'),
        '--deadline',
        '60s',
        '--job',
        job_id,
        '--wait',
      ],
      {},
    );
    const said = (state: string) => waiting.output.stderr.includes(`job ${job_id}: ${state}\n`);
    await waitFor('created', () => said('created'), { timeoutMs: 20_000 });

    // The plugin's side, by hand: it says it runs the job.
    expect((await request(`${base}/jobs/${job_id}/running`, { token: integration.relay_token, method: 'POST' })).status).toBe(200);
    await waitFor('running', () => said('running'), { timeoutMs: 20_000 });
    expect(waiting.output.stderr).not.toMatch(/completed/);

    first.child.kill('SIGKILL');
    await first.exited;
    await started(['backend', '--port', new URL(listening).port, '--db', db, '--log-level', 'warn']);
    const result = { insights: [{ text: 'Ask for the budget owner.', kind: 'question', confidence: 0.7 }] };
    expect((await request(`${base}/jobs/${job_id}/result`, { token: integration.relay_token, body: { result } })).status).toBe(200);

    expect(await waiting.exited).toEqual({ code: 0, signal: null });
    expect(waiting.output.stderr.split('\n').filter(Boolean)).toEqual([
      `job ${job_id}: created`,
      `job ${job_id}: running`,
      `job ${job_id}: completed`,
    ]);
    expect(JSON.parse(waiting.output.stdout)).toEqual(result);
  },
);

it(
  'a BYO job create retried with --job is the same job (not 409), and --wait prints the result a create already answered completed',
  { timeout: 60_000 },
  async () => {
    const dir = folder();
    const db = join(dir, 'backend.db');
    const integration = JSON.parse((await runCli(['backend', 'integration', 'create', '--db', db])).stdout) as {
      integration_id: string;
      relay_token: string;
      client_token: string;
    };
    const backend = await started(['backend', '--port', '0', '--db', db, '--log-level', 'warn']);
    const listening = backend.line.listening as string;
    const keys = pair();
    const keysFile = join(dir, 'client-keys.json');
    writeKeysFile(keysFile, {
      kind: 'assistant-relay/client-keys',
      version: 1,
      backend: listening,
      integration_id: integration.integration_id,
      provider_kind: 'assistant-relay',
      client_token: integration.client_token,
      keys: [storedKeys(keys.client, Date.now())],
    });
    writeFileSync(
      join(dir, 'payload.json'),
      JSON.stringify({ session_id: 's', transcript: [{ speaker: 'Ana', text: 'What is the budget?' }] }),
    );
    const job_id = randomUUID();
    const create = (...more: string[]) =>
      runCli([
        'job',
        'create',
        '--keys',
        keysFile,
        '--purpose',
        'live_analysis',
        '--payload',
        join(dir, 'payload.json'),
        '--deadline',
        '60s',
        '--job',
        job_id,
        ...more,
      ]);

    const first = await create();
    expect([first.code, first.stderr]).toEqual([0, '']);
    const view = JSON.parse(first.stdout) as JobView;
    expect(view).toMatchObject({ job_id, state: 'created', byo: true });
    // Its answer lost, say: the same command again is the same job (the same sealed bytes), not job_conflict.
    const again = await create();
    expect([again.code, again.stderr]).toEqual([0, '']);
    expect(JSON.parse(again.stdout)).toEqual(view);

    // The plugin's side, by hand: it runs the job and seals its result for the job as the client created it.
    const base = `${listening}/api/v1/assistant/integrations/${integration.integration_id}`;
    expect((await request(`${base}/jobs/${job_id}/running`, { token: integration.relay_token, method: 'POST' })).status).toBe(200);
    const result = { insights: [{ text: 'Ask for the budget owner.', kind: 'question', confidence: 0.7 }] };
    const binding = {
      direction: 'assistant_to_client' as const,
      integration_id: integration.integration_id,
      job_id,
      purpose: 'live_analysis',
      deadline_at: view.deadline_at,
      response_schema: jsonSchemaOf(PURPOSES.live_analysis.result),
      schema_version: 1,
      envelope_version: 1,
    };
    expect(
      (
        await request(`${base}/jobs/${job_id}/result`, {
          token: integration.relay_token,
          body: { result: seal(keys.assistant, binding, result) },
        })
      ).status,
    ).toBe(200);

    // Asked once more, the create's own answer is completed already: --wait prints its result (opened once).
    const waited = await create('--wait');
    expect([waited.code, waited.stderr]).toEqual([0, expect.stringMatching(new RegExp(`job ${job_id}: completed`))]);
    expect(JSON.parse(waited.stdout)).toEqual(result);
  },
);
