/**
 * The backend relay SIGKILLed with jobs queued and delivered (issue 9): after it restarts on the same log
 * and port, every job ends exactly once, none is lost, and the plugin runs none twice to completion.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { readEvents } from '../support/log.js';
import { request } from '../support/http.js';
import { runCli, started, useChildFolder } from '../support/child.js';
import { eventually } from '../support/wait.js';

const folder = useChildFolder();

/** A `command` reasoner that takes its time, so that jobs are still running when the backend dies. */
const SLOW_REASONER = `let input = '';
process.stdin.on('data', (chunk) => (input += chunk)).on('end', () =>
  setTimeout(() => process.stdout.write(JSON.stringify({ insights: [{ text: 'answered', kind: 'fact', confidence: 1 }] })), 400));`;

const JOBS = 6;
/** Processes start and jobs run here: up to 30 s, looked at every 25 ms. */
const LONG = { timeoutMs: 30_000, everyMs: 25 };

it('after a SIGKILL of the backend with jobs queued and running, every job completes exactly once', { timeout: 90_000 }, async () => {
  const dir = folder();
  const db = join(dir, 'backend.db');
  const plugin = join(dir, 'plugin.db');
  const integration = JSON.parse((await runCli(['backend', 'integration', 'create', '--db', db])).stdout) as {
    integration_id: string;
    relay_token: string;
    client_token: string;
  };
  const tokenFile = join(dir, 'relay-token');
  writeFileSync(tokenFile, `${integration.relay_token}\n`, { mode: 0o600 });
  const reasoner = join(dir, 'slow-reasoner.mjs');
  writeFileSync(reasoner, SLOW_REASONER);

  const first = await started(['backend', '--port', '0', '--db', db, '--log-level', 'warn']);
  const listening = first.line.listening as string;
  const base = `${listening}/api/v1/assistant/integrations/${integration.integration_id}`;
  const ids = Array.from({ length: JOBS }, () => randomUUID());
  for (const job_id of ids) {
    const created = await request(`${base}/jobs`, {
      token: integration.client_token,
      body: {
        job_id,
        purpose: 'live_analysis',
        payload: { session_id: 's', transcript: [{ speaker: 'Ana', text: 'What is the timeline?' }] },
        deadline_ms: 60_000,
      },
    });
    expect(created.status).toBe(201);
  }
  const states = () =>
    Promise.all(
      ids.map(async (id) => ((await request(`${base}/jobs/${id}`, { token: integration.client_token })).body as { state: string }).state),
    );

  await started([
    'plugin',
    '--backend',
    listening,
    '--integration',
    integration.integration_id,
    '--relay-token-file',
    tokenFile,
    '--db',
    plugin,
    '--max-concurrent-jobs',
    '2',
    '--reasoner',
    'command',
    '--command',
    JSON.stringify([process.execPath, reasoner]),
    '--log-level',
    'silent',
  ]);
  // Kill it while some jobs run and others wait their turn.
  await eventually(
    'a job running and one still queued',
    states,
    (s) => s.some((state) => state === 'running') && s.some((state) => state !== 'completed' && state !== 'running'),
    LONG,
  );
  first.child.kill('SIGKILL');
  expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });

  const port = new URL(listening).port;
  const second = await started(['backend', '--port', port, '--db', db, '--log-level', 'warn']);
  expect(second.line.listening).toBe(listening);
  await eventually('every job completed', states, (s) => s.every((state) => state === 'completed'), LONG);
  second.child.kill('SIGTERM');
  expect(await second.exited).toEqual({ code: 0, signal: null });

  const events = readEvents(db);
  for (const id of ids) {
    expect(
      events.filter((e) => e.job_id === id && e.type === 'job.created'),
      id,
    ).toHaveLength(1);
    expect(
      events.filter((e) => e.job_id === id && ['job.completed', 'job.failed', 'job.expired', 'job.cancelled'].includes(e.type)),
      id,
    ).toEqual([expect.objectContaining({ type: 'job.completed' })]);
  }
  // The plugin finished each job once, whatever the backend redelivered.
  const finished = readEvents(plugin).filter((e) => e.type === 'plugin.job_finished');
  expect(finished.map((e) => e.job_id).sort()).toEqual([...ids].sort());
});
