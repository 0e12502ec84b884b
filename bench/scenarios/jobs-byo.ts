/**
 * The BYO side of the reasoning channel scenario (issue 26's "plain and BYO"): an integration made by a
 * pairing through the backend, as an operator and a person would make it (a ticket from `backend
 * pairing-ticket`, `pair` on the client's side, the plugin completing it with `--pairing-code`), and a
 * job's sealed create body and opened result. The backend relays the envelopes blind; the plugin opens
 * each payload and seals each result, so what BYO costs shows in the plugin's CPU per job and in the
 * backend's (bigger bodies, the same work).
 */
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { bindingOf } from '../../adapters/client/job-checks.js';
import { open, seal, type Keyring } from '../../protocol/byo/index.js';
import type { JobPurpose } from '../../protocol/reasoning.js';
import { ClientKeysFile, keyringOfFile, readKeysFile } from '../../storage/keys-file.js';
import { CLI } from '../contenders.js';
import { spawnPlugin, type Integration } from './jobs.js';

/** What a client holds of a paired integration: its id and the pairing's keys. */
export interface Paired {
  readonly integration_id: string;
  readonly keyring: Keyring;
}

/** A job's deadline as sealed into its envelope: far enough that no bench job meets it. */
const DEADLINE_MS = 120_000;

/** The first line a child prints on stdout, parsed; a child that exits before it fails. */
function firstLine(child: ReturnType<typeof spawn>, name: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let out = '';
    const exited = (code: number | null) => reject(new Error(`${name} exited (${code}) before its first line`));
    child.once('exit', exited);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const end = out.indexOf('\n');
      if (end < 0) return;
      child.off('exit', exited);
      try {
        resolve(JSON.parse(out.slice(0, end)) as Record<string, unknown>);
      } catch {
        reject(new Error(`${name} printed ${JSON.stringify(out.slice(0, end))}, not a JSON line`));
      }
    });
  });
}

/**
 * A pairing through the backend at `origin` (started with `--token-file operatorTokenFile(dir)`), neither
 * side asking a person (`--yes`): the plugin, started and streaming, and what the client holds.
 */
export async function pairedPlugin(
  origin: string,
  dir: string,
  operatorToken: string,
): Promise<{ integration: Integration; plugin: ReturnType<typeof spawn>; paired: Paired }> {
  const issued = execFileSync(process.execPath, [CLI, 'backend', 'pairing-ticket', '--backend', origin, '--token-file', operatorToken], {
    encoding: 'utf8',
  });
  const { ticket } = JSON.parse(issued) as { ticket: string };
  const clientKeys = join(dir, 'client-keys.json');
  const pairing = spawn(process.execPath, [CLI, 'pair', '--backend', origin, '--keys', clientKeys, '--ticket', ticket, '--yes'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const paired = new Promise<number | null>((resolve) => pairing.once('exit', resolve));
  const { pairing_code } = (await firstLine(pairing, 'pair')) as { pairing_code: string };
  const plugin = await spawnPlugin(dir, [
    '--backend',
    origin,
    '--pairing-code',
    pairing_code,
    '--keys',
    join(dir, 'assistant-keys.json'),
    '--yes',
  ]);
  const code = await paired;
  if (code !== 0) throw new Error(`pair exited ${code}`);
  const keys = readKeysFile(clientKeys, ClientKeysFile);
  return {
    integration: { integration_id: keys.integration_id, client_token: keys.client_token, relay_token: '' },
    plugin,
    paired: { integration_id: keys.integration_id, keyring: keyringOfFile(keys) },
  };
}

/** A BYO job's create body: the payload sealed to the assistant, bound to the job as JobsClient binds it. */
export function sealedCreate(paired: Paired, job_id: string, purpose: JobPurpose, payload: unknown) {
  const deadline_at = new Date(Date.now() + DEADLINE_MS).toISOString();
  const binding = bindingOf({ job_id, integration_id: paired.integration_id, purpose, deadline_at }, 'client_to_assistant');
  return {
    job_id,
    purpose,
    payload: seal(paired.keyring.current, binding, payload),
    byo: true,
    deadline_at,
    response_schema: binding.response_schema,
  };
}

/** A completed BYO job's result, opened: it throws when the envelope does not open for this job. */
export function openedResult(paired: Paired, view: { job_id: string; purpose: JobPurpose; deadline_at: string; result: unknown }): unknown {
  const binding = bindingOf({ ...view, integration_id: paired.integration_id }, 'assistant_to_client');
  return open((kid) => paired.keyring.keyOf(kid), binding, view.result);
}
