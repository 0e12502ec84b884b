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
import { request } from '../support/http.js';
import { runCli, start, started, useChildFolder } from '../support/child.js';
import { waitFor } from '../support/wait.js';

const folder = useChildFolder();

it('job create --wait says each change as it happens, follows again after a backend restart, and prints the result', { timeout: 60_000 }, async () => {
  const dir = folder();
  const db = join(dir, 'backend.db');
  const integration = JSON.parse((await runCli(['backend', 'integration', 'create', '--db', db])).stdout) as { integration_id: string; relay_token: string; client_token: string };
  const clientTokenFile = join(dir, 'client-token');
  writeFileSync(clientTokenFile, `${integration.client_token}\n`, { mode: 0o600 });
  const first = await started(['backend', '--port', '0', '--db', db, '--log-level', 'warn']);
  const listening = first.line.listening as string;
  const base = `${listening}/api/v1/assistant/integrations/${integration.integration_id}`;
  const job_id = randomUUID();
  writeFileSync(join(dir, 'payload.json'), JSON.stringify({ session_id: 's', transcript: [{ speaker: 'Ana', text: 'What is the budget?' }] }));
  const waiting = start(
    ['job', 'create', '--backend', listening, '--integration', integration.integration_id, '--client-token-file', clientTokenFile, '--purpose', 'live_analysis', '--payload', join(dir, 'payload.json'), '--deadline', '60s', '--job', job_id, '--wait'],
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
  expect(waiting.output.stderr.split('\n').filter(Boolean)).toEqual([`job ${job_id}: created`, `job ${job_id}: running`, `job ${job_id}: completed`]);
  expect(JSON.parse(waiting.output.stdout)).toEqual(result);
});
