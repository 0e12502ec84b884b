/**
 * What the client commands (`job`, `integrations`, `pair`) share: the flags that name an integration and
 * its client token, the client of that integration's routes, and how a failure ends the command: a usage
 * error exits 2, anything else is a plain line on stderr and exit 1 (these are terminal tools, not
 * supervised servers).
 */
import type { Keyring } from '../../protocol/index.js';
import type { z } from 'zod';
import { AssistantKeysFile, ClientKeysFile, KeysFileError, keyringOfFile, readKeysFile } from '../../storage/keys-file.js';
import { BackendClient } from '../client/backend-client.js';
import { UsageError, baseUrlFlag, requiredFlag } from './flags.js';
import { readTokenFile } from './service.js';

export const CLIENT_FLAGS = {
  backend: { type: 'string' },
  integration: { type: 'string' },
  'client-token-file': { type: 'string' },
  keys: { type: 'string' },
} as const;

export const CLIENT_USAGE = `  --keys FILE              the client's keys file, written by \`assistant-relay pair\`: the backend, the
                           integration, its client token and the keys of BYO jobs; or, without pairing:
  --backend URL            the backend relay's base URL
  --integration ID         the integration
  --client-token-file FILE its client token (a private file)`;

/** What the client flags name: the integration's client, and the pairing's keys when they came from a keys file. */
export interface ClientCredentials {
  readonly client: BackendClient;
  readonly integrationId: string;
  readonly keys: Keyring | undefined;
}

export function credentialsFromFlags(flag: (name: keyof typeof CLIENT_FLAGS) => string | undefined): ClientCredentials {
  const keysFile = flag('keys');
  if (keysFile === undefined) return { client: clientFromFlags(flag), integrationId: requiredFlag(flag, 'integration'), keys: undefined };
  const given = (['integration', 'client-token-file'] as const).filter((name) => flag(name) !== undefined);
  if (given.length > 0) throw new UsageError(`--keys names the integration and its token: leave out --${given.join(' and --')}`);
  const file = keysFileFlag(keysFile, ClientKeysFile);
  return {
    client: integrationClient(flag('backend') ?? file.backend, file.integration_id, file.client_token),
    integrationId: file.integration_id,
    keys: keyringOfFile(file),
  };
}

/** The keys file a `--keys` flag names; one that cannot be used is a usage error that says why. */
export function keysFileFlag<S extends typeof ClientKeysFile | typeof AssistantKeysFile>(path: string, schema: S): z.infer<S> {
  try {
    return readKeysFile(path, schema);
  } catch (error) {
    if (error instanceof KeysFileError) throw new UsageError(error.message);
    throw error;
  }
}

/** The client of the integration the flags name, with its client token; each flag is required. */
export function clientFromFlags(flag: (name: keyof typeof CLIENT_FLAGS) => string | undefined): BackendClient {
  const required = (name: keyof typeof CLIENT_FLAGS) => requiredFlag(flag, name);
  return integrationClient(required('backend'), required('integration'), readTokenFile(required('client-token-file'), { create: false }));
}

/** The client of one integration: `…/api/v1/assistant/integrations/{id}`. */
export function integrationClient(backend: string, integrationId: string, token: string): BackendClient {
  return new BackendClient(`${baseUrlFlag('backend', backend)}/api/v1/assistant/integrations/${encodeURIComponent(integrationId)}`, token);
}

/** Runs a client command: a usage error is thrown on (exit 2), any other failure is a line on stderr and exit 1. */
export async function runClientCommand(name: string, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    if (error instanceof UsageError) throw error;
    process.stderr.write(`assistant-relay ${name}: ${(error as Error).message}\n`);
    process.exitCode = 1;
  }
}
