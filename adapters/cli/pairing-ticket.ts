/**
 * `assistant-relay backend pairing-ticket`: the operator issues a one-time pairing ticket through a
 * running backend's admin route (PROTOCOL.md 7.8), for a backend whose policy is `--pairing ticket`; the
 * person who pairs gives it to `assistant-relay pair --ticket`. Prints `{"ticket","expires_at"}`: the
 * ticket is shown this once.
 */
import { PairingTicketAnswer } from '../../protocol/index.js';
import { BackendClient } from '../client/backend-client.js';
import { runClientCommand } from './client.js';
import { UsageError, baseUrlFlag, parseDuration, readFlags, requiredFlag } from './flags.js';
import { readTokenFile } from './service.js';

export const PAIRING_TICKET_USAGE = `       assistant-relay backend pairing-ticket --backend URL --token-file FILE [--ttl D]
  issues a one-time pairing ticket through a running backend's admin routes (the operator token in
  --token-file) and prints {"ticket","expires_at"}; --ttl: how long it is valid, 1m to 7d (default 24h).`;

const FLAGS = { backend: { type: 'string' }, 'token-file': { type: 'string' }, ttl: { type: 'string' } } as const;

export function pairingTicketCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const get = readFlags(argv, FLAGS, env);
  const backend = baseUrlFlag('backend', requiredFlag(get, 'backend'));
  const token = readTokenFile(requiredFlag(get, 'token-file'), { create: false });
  const ttl = get('ttl');
  const ttlMs = ttl === undefined ? undefined : parseDuration('ttl', ttl, 7 * 86_400_000);
  if (ttlMs !== undefined && ttlMs < 60_000) throw new UsageError('--ttl must be at least 1m');
  return runClientCommand('backend pairing-ticket', async () => {
    const admin = new BackendClient(`${backend}/api/v1/admin`, token);
    const issued = await admin.call(PairingTicketAnswer, '/pairing-tickets', {
      method: 'POST',
      body: ttlMs === undefined ? {} : { ttl_ms: ttlMs },
    });
    process.stdout.write(`${JSON.stringify(issued)}\n`);
  });
}
