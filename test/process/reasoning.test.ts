/**
 * The reasoning channel as real processes over loopback (issue 9's full run): an integration created
 * with the CLI, the backend relay and the assistant plugin (builtin reasoner) as children, and a client
 * that probes the plugin's capabilities, runs a live analysis and a session summary, and reads each
 * result, valid for its purpose.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { PURPOSES, type JobPurpose } from '../../src/protocol/index.js';
import { runCli, start, useChildFolder } from '../support/child.js';
import { request } from '../support/http.js';

const folder = useChildFolder();

/** Starts `assistant-relay ARGS` and resolves with its first stdout line, parsed. */
async function started(args: readonly string[]): Promise<Record<string, unknown>> {
  const { output, exited } = start(args, {});
  const deadline = Date.now() + 15_000;
  while (!output.stdout.includes('\n')) {
    if (Date.now() > deadline) throw new Error(`${args[0]} printed nothing; stderr ${output.stderr.slice(0, 2_000)}`);
    const exit = await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 20, undefined))]);
    if (exit !== undefined) throw new Error(`${args[0]} exited: ${output.stderr.slice(0, 2_000)}`);
  }
  return JSON.parse(output.stdout.slice(0, output.stdout.indexOf('\n'))) as Record<string, unknown>;
}

it('creates an integration, runs backend and plugin, and probes, analyses and summarises through them', { timeout: 60_000 }, async () => {
  const dir = folder();
  const db = join(dir, 'backend.db');
  const created = await runCli(['backend', 'integration', 'create', '--db', db]);
  expect(created.code).toBe(0);
  const integration = JSON.parse(created.stdout) as { integration_id: string; relay_token: string; client_token: string };
  const tokenFile = join(dir, 'relay-token');
  writeFileSync(tokenFile, `${integration.relay_token}\n`, { mode: 0o600 });

  const { listening } = (await started(['backend', '--port', '0', '--db', db, '--log-level', 'warn'])) as { listening: string };
  expect(
    await started(['plugin', '--backend', listening, '--integration', integration.integration_id, '--relay-token-file', tokenFile, '--db', join(dir, 'plugin.db'), '--log-level', 'warn']),
  ).toMatchObject({ plugin: 'started', reasoner: 'builtin' });

  const base = `${listening}/api/v1/assistant/integrations/${integration.integration_id}`;
  const transcript = [
    { speaker: 'Ana', text: 'Our budget is 40,000 for the year.' },
    { speaker: 'Ben', text: 'What is the timeline for rollout?' },
    { speaker: 'Ana', text: 'We decided to start in March. I will send the contract.' },
  ];
  const payloads: Record<JobPurpose, Record<string, unknown>> = {
    capability_probe: {},
    live_analysis: { session_id: 'call-1', transcript },
    session_summary: { session_id: 'call-1', transcript },
  };
  for (const purpose of ['capability_probe', 'live_analysis', 'session_summary'] as const) {
    const job_id = randomUUID();
    expect((await request(`${base}/jobs`, { token: integration.client_token, body: { job_id, purpose, payload: payloads[purpose] } })).status).toBe(201);
    let view: Record<string, unknown> = {};
    for (const since = Date.now(); view.state !== 'completed' && view.state !== 'failed'; await new Promise((resolve) => setTimeout(resolve, 50))) {
      if (Date.now() - since > 15_000) throw new Error(`the ${purpose} job is still ${String(view.state)}`);
      view = (await request(`${base}/jobs/${job_id}`, { token: integration.client_token })).body as Record<string, unknown>;
    }
    expect(view).toMatchObject({ state: 'completed', purpose });
    expect(PURPOSES[purpose].result.safeParse(view.result).success).toBe(true);
  }
});

it('refuses an integration for a provider that is coming soon, with exit 2', async () => {
  const result = await runCli(['backend', 'integration', 'create', '--db', join(folder(), 'backend.db'), '--provider', 'a2a-bridge']);
  expect([result.code, result.stderr]).toEqual([2, expect.stringMatching(/coming soon/)]);
});
