/**
 * BYO end to end as real processes over loopback (issue 10): a backend; a client that pairs with
 * `assistant-relay pair` and an assistant that completes it with `plugin --pairing-code` (both show the
 * same short string); then a capability probe, a live analysis and a session summary as BYO jobs, their
 * results opened and checked by the client. The backend is blind: a sentinel in every payload and result
 * is never in its database file (WAL included) nor in anything it printed.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { CapabilityProfile, PURPOSES } from '../../src/protocol/index.js';
import { runCli, start, started, useChildFolder } from '../support/child.js';

const folder = useChildFolder();
const SENTINEL = 'SENTINEL-7f3a9c-budget-owner';

async function until(what: string, done: () => boolean): Promise<void> {
  for (const since = Date.now(); !done(); await new Promise((resolve) => setTimeout(resolve, 20))) {
    if (Date.now() - since > 20_000) throw new Error(`still waiting for ${what}`);
  }
}

it('pairs two processes through the backend and runs BYO jobs it cannot read', { timeout: 90_000 }, async () => {
  const dir = folder();
  const db = join(dir, 'backend.db');
  const backend = await started(['backend', '--port', '0', '--db', db, '--log-level', 'debug']);
  const listening = backend.line.listening as string;
  const clientKeys = join(dir, 'client-keys.json');
  const assistantKeys = join(dir, 'assistant-keys.json');

  const pairing = start(['pair', '--backend', listening, '--keys', clientKeys], {});
  await until('the pairing code', () => pairing.output.stdout.includes('\n'));
  const code = (JSON.parse(pairing.output.stdout.split('\n')[0]!) as { pairing_code: string }).pairing_code;
  expect(code).toMatch(/^[0-9A-Z]{5}(-[0-9A-Z]{5}){3}$/);
  const plugin = await started(['plugin', '--backend', listening, '--pairing-code', code, '--keys', assistantKeys, '--db', join(dir, 'plugin.db'), '--log-level', 'warn']);
  expect(await pairing.exited).toEqual({ code: 0, signal: null });
  expect(pairing.output.stderr).toContain(`Pairing code: ${code}`);
  const paired = JSON.parse(pairing.output.stdout.split('\n')[1]!) as { paired: boolean; sas: string; integration_id: string };
  expect(plugin.line).toMatchObject({ plugin: 'started', byo: true, integration: paired.integration_id, sas: paired.sas });
  expect(plugin.output.stderr).toContain(`Short authentication string: ${paired.sas}`);
  for (const file of [clientKeys, assistantKeys]) expect(statSync(file).mode & 0o777).toBe(0o600);

  const client = ['--keys', clientKeys];
  const probed = await runCli(['job', 'create', ...client, '--purpose', 'capability_probe', '--wait']);
  expect([probed.code, probed.stderr]).toEqual([0, expect.stringMatching(/: completed/)]);
  expect(CapabilityProfile.safeParse(JSON.parse(probed.stdout)).success).toBe(true);

  const transcript = [
    { speaker: 'Ana', text: `What is the budget? Ask ${SENTINEL} about it.` },
    { speaker: 'Ben', text: `We decided that ${SENTINEL} owns the budget.` },
  ];
  for (const [purpose, payload] of [
    ['live_analysis', { session_id: 's-1', transcript }],
    ['session_summary', { session_id: 's-1', transcript, notes: `notes for ${SENTINEL}` }],
  ] as const) {
    const file = join(dir, `${purpose}.json`);
    writeFileSync(file, JSON.stringify(payload));
    const ran = await runCli(['job', 'create', ...client, '--purpose', purpose, '--payload', file, '--wait']);
    expect([purpose, ran.code, ran.stderr]).toEqual([purpose, 0, expect.stringMatching(/: completed/)]);
    const result = JSON.parse(ran.stdout) as unknown;
    expect(PURPOSES[purpose].result.safeParse(result).success).toBe(true);
    if (purpose === 'session_summary') expect(JSON.stringify(result)).toContain(SENTINEL);
  }

  // What the backend holds and printed, read as a debugger would: never the sentinel.
  const files = [db, `${db}-wal`].filter(existsSync);
  for (const file of files) expect(readFileSync(file).includes(SENTINEL), file).toBe(false);
  expect(backend.output.stdout + backend.output.stderr).not.toContain(SENTINEL);
  expect(backend.output.stderr.length).toBeGreaterThan(0);
});
