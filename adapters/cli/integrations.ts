/**
 * `assistant-relay integrations`: the integrations the given credentials can read, as a JSON array of
 * `IntegrationView`s on stdout (whether each one's plugin is online, what it said of itself last, its
 * capability profile). A client token reads its own integration; listing every integration is the
 * operator's (`GET /api/v1/admin/integrations`).
 */
import { IntegrationView } from '../../protocol/index.js';
import { CLIENT_FLAGS, CLIENT_USAGE, credentialsFromFlags, runClientCommand } from './client.js';
import { readFlags } from './flags.js';

export const INTEGRATIONS_USAGE = `usage: assistant-relay integrations --keys FILE | --backend URL --integration ID --client-token-file FILE
${CLIENT_USAGE}
Prints a JSON array of the integrations these credentials can read.
Each flag may also be set as ASSISTANT_RELAY_<FLAG>, e.g. ASSISTANT_RELAY_BACKEND=http://127.0.0.1:8788.`;

export function integrationsCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  return runClientCommand('integrations', async () => {
    const { client } = credentialsFromFlags(readFlags(argv, CLIENT_FLAGS, env));
    const view = await client.call(IntegrationView, '', { method: 'GET' });
    process.stdout.write(`${JSON.stringify([view])}\n`);
  });
}
