/**
 * `assistant-relay rekey`: the client rotates its pairing's keys (PROTOCOL.md 7.12) with no person
 * needed: the plugin answers through the backend, and the new keys go first in the keys file (the two
 * sets before them are kept, so results of jobs in flight still open). Prints `{"rekeyed":true,"kid":…}`.
 */
import { rotateKeys } from '../client/rekey.js';
import { ClientKeysFile, KEPT_KEY_SETS, keyringOfFile, storedKeys, writeKeysFile } from '../../storage/keys-file.js';
import { integrationClient, keysFileFlag, runClientCommand } from './client.js';
import { parseDuration, readFlags, requiredFlag } from './flags.js';

export const REKEY_USAGE = `usage: assistant-relay rekey --keys FILE [--timeout D]
  --keys FILE              the client's keys file, from \`assistant-relay pair\`; the new keys are written to it
  --timeout D              how long to wait for the assistant's answer, e.g. 2m (default 2m)
Each flag may also be set as ASSISTANT_RELAY_<FLAG>.`;

const FLAGS = { keys: { type: 'string' }, timeout: { type: 'string' } } as const;

export function rekeyCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  return runClientCommand('rekey', async () => {
    const flags = readFlags(argv, FLAGS, env);
    const path = requiredFlag(flags, 'keys');
    const file = keysFileFlag(path, ClientKeysFile);
    const keys = await rotateKeys({
      client: integrationClient(file.backend, file.integration_id, file.client_token),
      integrationId: file.integration_id,
      current: keyringOfFile(file).current,
      timeoutMs: parseDuration('timeout', flags('timeout') ?? '2m'),
    });
    writeKeysFile(path, { ...file, keys: [storedKeys(keys, Date.now()), ...file.keys].slice(0, KEPT_KEY_SETS) });
    process.stdout.write(`${JSON.stringify({ rekeyed: true, kid: keys.kid })}\n`);
  });
}
