/**
 * BYO end to end as real processes over loopback (issue 10): a backend; a client that pairs with
 * `assistant-relay pair` and an assistant that completes it with `plugin --pairing-code` (both show the
 * same short string, and on a terminal ask their person whether the other side shows it too: issue 23);
 * then a capability probe, a live analysis and a session summary as BYO jobs, their
 * results opened and checked by the client. The backend is blind: a sentinel in every payload and result
 * is never in its database file (WAL included) nor in anything it printed.
 */
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AssistantKeysFile, ClientKeysFile, keyringOfFile, readKeysFile } from '../../storage/keys-file.js';
import { BackendClient } from '../../adapters/client/backend-client.js';
import { JobsClient } from '../../adapters/client/jobs.js';
import { CapabilityProfile, JobView, PURPOSES, keyringOf, type SessionKeys } from '../../protocol/index.js';
import { eventually, waitFor } from '../support/wait.js';
import { ServeChild, firstLine, runCli, start, started, useChildFolder } from '../support/child.js';

const folder = useChildFolder();
const SENTINEL = 'SENTINEL-7f3a9c-budget-owner';
const SAMPLE_CALL = fileURLToPath(new URL('../../samples/sales-call.txt', import.meta.url));

/**
 * A backend (its default pairing policy: a ticket from the operator, issued with `backend
 * pairing-ticket`), and a client and a plugin paired through it as processes, neither asking a person.
 */
async function pairedProcesses(dir: string, pluginArgs: readonly string[] = []) {
  const db = join(dir, 'backend.db');
  const operatorToken = join(dir, 'operator-token');
  const backend = await started(['backend', '--port', '0', '--db', db, '--token-file', operatorToken, '--log-level', 'debug']);
  const listening = backend.line.listening as string;
  const clientKeys = join(dir, 'client-keys.json');
  const assistantKeys = join(dir, 'assistant-keys.json');
  const issued = await runCli(['backend', 'pairing-ticket', '--backend', listening, '--token-file', operatorToken, '--ttl', '10m']);
  expect([issued.code, issued.stderr]).toEqual([0, '']);
  const { ticket } = JSON.parse(issued.stdout) as { ticket: string };

  const pairing = start(['pair', '--backend', listening, '--keys', clientKeys, '--ticket', ticket, '--yes'], {});
  const { pairing_code: code } = (await firstLine(pairing, 'pair', {
    timeoutMs: 20_000,
    context: () => `the backend's stderr ${JSON.stringify(backend.output.stderr.slice(-4_000))}`,
  })) as { pairing_code: string };
  expect(code).toMatch(/^[0-9A-Z]{5}(-[0-9A-Z]{5}){3}$/);
  const plugin = await started([
    'plugin',
    '--backend',
    listening,
    '--pairing-code',
    code,
    '--keys',
    assistantKeys,
    '--yes',
    '--db',
    join(dir, 'plugin.db'),
    '--log-level',
    'warn',
    ...pluginArgs,
  ]);
  expect(await pairing.exited).toEqual({ code: 0, signal: null });
  return { db, backend, listening, clientKeys, assistantKeys, pairing, plugin, code, ticket };
}

it('pairs two processes through the backend and runs BYO jobs it cannot read', { timeout: 90_000 }, async () => {
  const dir = folder();
  const { db, backend, clientKeys, assistantKeys, pairing, plugin, code } = await pairedProcesses(dir);
  expect(pairing.output.stderr).toContain(`Pairing code: ${code}`);
  const paired = JSON.parse(pairing.output.stdout.split('\n')[1]!) as { paired: boolean; sas: string; integration_id: string };
  expect(plugin.line).toMatchObject({ plugin: 'started', byo: true, integration: paired.integration_id, sas: paired.sas });
  expect(plugin.output.stderr).toContain(`Short authentication string: ${paired.sas} (not compared with the client's: --yes)`);
  expect(pairing.output.stderr).toContain(`Short authentication string: ${paired.sas} (not compared with the assistant's side's: --yes)`);
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

  // A recorded call: insights from the host (through the builtin reasoner), then its summary as a BYO job.
  const hostToken = join(dir, 'host-token');
  writeFileSync(hostToken, 'call-test-token\n', { mode: 0o600 });
  const host = await ServeChild.start([
    '--port',
    '0',
    '--db',
    join(dir, 'relay.db'),
    '--token-file',
    hostToken,
    '--insights',
    'builtin',
    '--log-level',
    'silent',
  ]);
  const played = await runCli([
    'call',
    '--url',
    host.url,
    '--token-file',
    hostToken,
    '--transcript',
    SAMPLE_CALL,
    '--pace',
    '1ms',
    ...client,
    '--json',
  ]);
  expect([played.code, played.stderr]).toEqual([0, '']);
  const events = played.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { kind: string; text?: string; summary?: string });
  expect(events.filter((e) => e.kind === 'line')).toHaveLength(readFileSync(SAMPLE_CALL, 'utf8').trim().split('\n').length);
  expect(events.filter((e) => e.kind === 'insight').length).toBeGreaterThan(0);
  const summary = events.find((e) => e.kind === 'summary')!;
  expect(
    PURPOSES.session_summary.result.safeParse({
      summary: summary.summary,
      action_items: (summary as never as { action_items: unknown }).action_items,
      decisions: (summary as never as { decisions: unknown }).decisions,
    }).success,
  ).toBe(true);
  expect(summary.summary).toMatch(/budget|pilot|security/i);
  await host.stop('SIGTERM');

  // The same keys file names the integration for every client command.
  const listed = await runCli(['integrations', ...client]);
  expect([listed.code, (JSON.parse(listed.stdout) as Array<{ integration_id: string }>)[0]!.integration_id]).toEqual([
    0,
    paired.integration_id,
  ]);

  // What the backend holds and printed, read as a debugger would: never the sentinel.
  const files = [db, `${db}-wal`].filter(existsSync);
  for (const file of files) expect(readFileSync(file).includes(SENTINEL), file).toBe(false);
  expect(backend.output.stdout + backend.output.stderr).not.toContain(SENTINEL);
  expect(backend.output.stderr.length).toBeGreaterThan(0);
});

it('rotates the keys while BYO jobs run: every job completes, those sealed under the old keys too', { timeout: 90_000 }, async () => {
  const { listening, clientKeys, assistantKeys } = await pairedProcesses(folder(), ['--max-concurrent-jobs', '8']);
  const before = keyringOfFile(readKeysFile(clientKeys, ClientKeysFile));
  const file = readKeysFile(clientKeys, ClientKeysFile);
  const client = new BackendClient(`${listening}/api/v1/assistant/integrations/${file.integration_id}`, file.client_token);
  const payload = { session_id: 's', transcript: [{ speaker: 'Ana', text: `What is the budget, ${SENTINEL}?` }] };
  /** A BYO job sealed under `keys`, created now; resolves with its job_id. */
  const create = async (keys: SessionKeys) =>
    (
      await new JobsClient(client, file.integration_id, keyringOf([keys])).create({
        purpose: 'live_analysis',
        payload,
        deadline_ms: 60_000,
      })
    ).job_id;
  // Jobs under the old keys, created while the rotation runs.
  const rotation = runCli(['rekey', '--keys', clientKeys, '--timeout', '30s']);
  const old = await Promise.all(Array.from({ length: 30 }, () => create(before.current)));
  const rotated = await rotation;
  expect([rotated.code, rotated.stderr]).toEqual([0, '']);
  const { kid } = JSON.parse(rotated.stdout) as { kid: string };
  const after = keyringOfFile(readKeysFile(clientKeys, ClientKeysFile));
  expect([after.current.kid, after.keyOf(before.current.kid)]).toEqual([kid, before.current]);
  expect(readKeysFile(assistantKeys, AssistantKeysFile).keys.map((key) => key.kid)).toEqual([kid, before.current.kid]);
  // And jobs under the new keys: the plugin opens them without a restart.
  const fresh = await Promise.all(Array.from({ length: 10 }, () => create(after.current)));
  const jobs = new JobsClient(client, file.integration_id, after);
  for (const job_id of [...old, ...fresh]) {
    let view = await client.call(JobView, `/jobs/${job_id}`, { method: 'GET' });
    for (const since = Date.now(); view.state !== 'completed' && view.state !== 'failed' && Date.now() - since < 30_000;) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      view = await client.call(JobView, `/jobs/${job_id}`, { method: 'GET' });
    }
    expect([job_id, view.state]).toEqual([job_id, 'completed']);
    // A result goes back under the keys its payload came under.
    expect((view.result as { kid: string }).kid).toBe(old.includes(job_id) ? before.current.kid : kid);
    // And opens with the rotated keyring, bound to the job as created.
    expect(PURPOSES.live_analysis.result.safeParse((await jobs.show(job_id)).result).success).toBe(true);
  }
});

it(
  'refuses a keys file others can read, on either side, a pairing with a provider that is coming soon, and one without a ticket',
  { timeout: 60_000 },
  async () => {
    const dir = folder();
    const { listening, clientKeys, assistantKeys, ticket: used } = await pairedProcesses(dir);
    for (const file of [clientKeys, assistantKeys]) chmodSync(file, 0o644);
    const job = await runCli(['job', 'create', '--keys', clientKeys, '--purpose', 'capability_probe']);
    expect([job.code, job.stderr]).toEqual([2, expect.stringMatching(/keys file is not private: .*chmod 600/)]);
    const plugin = await runCli(['plugin', '--keys', assistantKeys, '--db', join(dir, 'plugin-2.db')]);
    expect([plugin.code, plugin.stderr]).toEqual([2, expect.stringMatching(/keys file is not private/)]);
    const comingSoon = await runCli([
      'pair',
      '--backend',
      listening,
      '--keys',
      join(dir, 'other-keys.json'),
      '--provider',
      'a2a-bridge',
      '--yes',
    ]);
    expect([comingSoon.code, comingSoon.stderr]).toEqual([1, expect.stringMatching(/422 provider_refused: .*coming soon/)]);
    // The ticket was used up by the pairing; without one this backend pairs no one.
    for (const ticket of [[], ['--ticket', used]]) {
      const refused = await runCli(['pair', '--backend', listening, '--keys', join(dir, 'other-keys.json'), '--yes', ...ticket]);
      expect([refused.code, refused.stderr]).toEqual([1, expect.stringMatching(/403 pairing_ticket_(required|invalid)/)]);
    }
    expect(existsSync(join(dir, 'other-keys.json'))).toBe(false);
  },
);

describe('the person confirms the short authentication string', () => {
  /** `pair` and `plugin --pairing-code` on terminals, through a backend; each side's person answers `answers`. */
  async function onTerminals(dir: string, answers: { readonly client: string; readonly assistant: string }) {
    const backend = await started(['backend', '--port', '0', '--db', join(dir, 'backend.db'), '--pairing', 'open', '--log-level', 'warn']);
    const listening = backend.line.listening as string;
    const keys = { client: join(dir, 'client-keys.json'), assistant: join(dir, 'assistant-keys.json') };
    const pairing = start(['pair', '--backend', listening, '--keys', keys.client], {}, undefined, { terminal: true });
    const code = (await eventually(
      'the pairing code',
      () => /"pairing_code":"([^"]+)"/.exec(pairing.output.stdout)?.[1],
      (found) => found !== undefined,
      { timeoutMs: 20_000 },
    ))!;
    const plugin = start(
      [
        'plugin',
        '--backend',
        listening,
        '--pairing-code',
        code,
        '--keys',
        keys.assistant,
        '--db',
        join(dir, 'plugin.db'),
        '--log-level',
        'warn',
      ],
      {},
      undefined,
      { terminal: true },
    );
    for (const [side, answer] of [
      [pairing, answers.client],
      [plugin, answers.assistant],
    ] as const) {
      await waitFor('the question', () => /show \d{3} \d{3} too\? \[y\/N\]/.test(side.output.stdout), { timeoutMs: 20_000 });
      side.child.stdin!.write(`${answer}\n`);
    }
    return { pairing, plugin, keys };
  }

  it('asks the person at each terminal, and writes the keys after both said yes', { timeout: 60_000 }, async () => {
    const { pairing, plugin, keys } = await onTerminals(folder(), { client: 'y', assistant: 'yes' });
    expect(await pairing.exited).toEqual({ code: 0, signal: null });
    expect(pairing.output.stdout).toMatch(/Does the assistant's side show (\d{3} \d{3}) too\? \[y\/N\][\s\S]*"paired":true,.*"sas":"\1"/);
    await waitFor('the plugin started', () => plugin.output.stdout.includes('"plugin":"started"'), { timeoutMs: 20_000 });
    expect(plugin.output.stdout).toMatch(/Does the client show \d{3} \d{3} too\?/);
    for (const file of Object.values(keys)) expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it("a no at the assistant's terminal aborts the pairing: neither side writes keys", { timeout: 60_000 }, async () => {
    const { pairing, plugin, keys } = await onTerminals(folder(), { client: 'y', assistant: 'n' });
    expect((await plugin.exited).code).toBe(1);
    expect(plugin.output.stdout).toMatch(/the person at the assistant's side saw another short authentication string/);
    expect((await pairing.exited).code).toBe(1);
    expect(pairing.output.stdout).toMatch(/assistant-relay pair: the assistant's side aborted the pairing: sas_rejected/);
    for (const file of Object.values(keys)) expect(existsSync(file)).toBe(false);
  });

  it('without a terminal and without --yes, refuses before it pairs', async () => {
    const dir = folder();
    // No backend listens there: a refusal before any request is the only way to answer at once.
    const nowhere = 'http://127.0.0.1:9';
    for (const args of [
      ['pair', '--backend', nowhere, '--keys', join(dir, 'client-keys.json')],
      [
        'plugin',
        '--backend',
        nowhere,
        '--pairing-code',
        '7K3QD-M4X9P-ZR2T6-VHW8N',
        '--keys',
        join(dir, 'assistant-keys.json'),
        '--db',
        join(dir, 'plugin.db'),
      ],
    ]) {
      const refused = await runCli(args);
      expect([args[0], refused.code, refused.stderr]).toEqual([
        args[0],
        2,
        expect.stringMatching(
          /a person must confirm that both sides show the same short authentication string, and stdin is not a terminal: .*--yes/,
        ),
      ]);
    }
    expect(existsSync(join(dir, 'client-keys.json')) || existsSync(join(dir, 'assistant-keys.json'))).toBe(false);
  });
});
