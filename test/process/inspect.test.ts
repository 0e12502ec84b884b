/**
 * `assistant-relay inspect` as users run it: the built CLI in a child process on a running backend relay's
 * log, its one ready line, its API, a clean exit on SIGTERM; and what it refuses as usage errors.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INSPECT_USAGE } from '../../adapters/cli/inspect.js';
import { pluginStreamOf, type PluginEvent } from '../../machines/reasoning/plugin-job-events.js';
import { EventLog } from '../../storage/event-log.js';
import { serveBackend, type ServedBackend } from '../support/backend.js';
import { runCli, started, useChildFolder } from '../support/child.js';
import { tempDir } from '../support/host.js';
import { request } from '../support/http.js';

const folder = useChildFolder();
const PLUGIN_JOB = randomUUID();

describe('inspect on a backend log', () => {
  const dir = tempDir();
  const db = join(dir, 'backend.db');
  let backend: ServedBackend;

  beforeAll(async () => {
    backend = await serveBackend({ dir });
    const integration = await backend.backend.integrations.create('assistant-relay');
    if ('refused' in integration) throw new Error(integration.refused.message);
    // No plugin takes them: they stay created.
    for (const job_id of [randomUUID(), randomUUID()]) {
      const created = await request(`${backend.url}/api/v1/assistant/integrations/${integration.integration_id}/jobs`, {
        token: integration.client_token,
        body: { job_id, purpose: 'capability_probe', payload: {} },
      });
      expect(created.status).toBe(201);
    }
    // A plugin's log: a job it received, and the backend refused to let it run.
    const plugin = EventLog.open<PluginEvent>({ path: join(dir, 'plugin.db'), streamOf: pluginStreamOf });
    void plugin.append({ type: 'plugin.job_received', job_id: PLUGIN_JOB, job: { job_id: PLUGIN_JOB }, cursor: '1', at: Date.now() });
    await plugin.append({ type: 'plugin.job_refused', job_id: PLUGIN_JOB, at: Date.now() });
    await plugin.close();
  });

  afterAll(() => backend.stop());

  it('prints one ready line, lists the jobs of the running backend, and exits 0 on SIGTERM', async () => {
    const { child, output, exited, line } = await started(['inspect', '--db', db, '--port', '0']);
    expect(line).toEqual({ inspecting: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/), db });
    const list = (await request(`${line.inspecting as string}/api/entities`)).body as {
      log: string;
      entities: Array<{ kind: string; state: string }>;
    };
    expect(list.log).toBe('backend');
    expect(list.entities.filter((entity) => entity.kind === 'job').map((entity) => entity.state)).toEqual(['open.created', 'open.created']);
    expect(list.entities.filter((entity) => entity.kind === 'integration')).toHaveLength(1);
    child.kill('SIGTERM');
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(output.stdout).toBe(`${JSON.stringify(line)}\n`);
  });

  it('with --token-file, asks the API for its token', async () => {
    const tokenFile = join(folder(), 'inspector.token');
    const { child, exited, line } = await started(['inspect', '--db', db, '--port', '0', '--token-file', tokenFile]);
    const token = readFileSync(tokenFile, 'utf8').trim();
    expect((await request(`${line.inspecting as string}/api/entities`)).status).toBe(401);
    expect((await request(`${line.inspecting as string}/api/entities`, { token })).status).toBe(200);
    child.kill('SIGTERM');
    expect((await exited).code).toBe(0);
  });

  it("lists a plugin's jobs in their plugin-job states", async () => {
    const { child, exited, line } = await started(['inspect', '--db', join(dir, 'plugin.db'), '--port', '0']);
    const list = (await request(`${line.inspecting as string}/api/entities`)).body as {
      log: string;
      entities: Array<{ kind: string; id: string; machine: string; state: string }>;
    };
    expect(list.log).toBe('plugin');
    expect(list.entities.map(({ kind, id, machine, state }) => ({ kind, id, machine, state }))).toEqual([
      { kind: 'plugin-job', id: PLUGIN_JOB, machine: 'plugin-job', state: 'open.refused' },
    ]);
    child.kill('SIGTERM');
    expect((await exited).code).toBe(0);
  });
});

describe('inspect: usage errors', () => {
  it.each([
    [[], '--db is required'],
    [['--db', 'x.db', '--port', 'many'], '--port must be a whole number, not "many"'],
    [
      ['--db', 'x.db', '--host', '0.0.0.0'],
      '--host 0.0.0.0 is not a loopback address: give --token-file, whose token the inspector then asks for',
    ],
    [['--db', 'x.db', '--verbose'], "Unknown option '--verbose'"],
  ])('%j: %s', async (args, message) => {
    const result = await runCli(['inspect', ...args]);
    expect([result.code, result.stdout]).toEqual([2, '']);
    expect(result.stderr.startsWith(`assistant-relay: ${message}`)).toBe(true);
    expect(result.stderr.endsWith(`\n${INSPECT_USAGE}\n`)).toBe(true);
  });

  it('refuses a file that is not an event log, and one that is missing', async () => {
    const notALog = join(folder(), 'notes.db');
    writeFileSync(notALog, 'just text, not SQLite');
    const refused = await runCli(['inspect', '--db', notALog]);
    expect([refused.code, refused.stderr]).toEqual([
      2,
      expect.stringMatching(/^assistant-relay: --db: .*notes\.db is not an assistant-relay event log\nusage: assistant-relay inspect/),
    ]);
    const missing = await runCli(['inspect', '--db', join(folder(), 'missing.db')]);
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringMatching(/^assistant-relay: --db: .*missing\.db is not a file\n/)]);
  });
});
