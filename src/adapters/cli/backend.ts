/**
 * `assistant-relay backend`: the backend relay (4.1) standalone, on its own event log; and
 * `assistant-relay backend integration create`, which creates an integration in a log no backend holds
 * (the lock refuses it otherwise) and prints its tokens, once.
 */
import { Backend } from '../../engine/backend/backend.js';
import { backendStreamOf, type BackendEvent } from '../../machines/backend-events.js';
import { EventLog } from '../../storage/event-log.js';
import { createBackendRelay } from '../backend-relay.js';
import { UsageError, integer, logLevelOf, parseOrigins, readFlags, retentionOf } from './flags.js';
import { exitOnFatal, jsonLogger, readTokenFile, runUntilSignalled } from './service.js';

export const BACKEND_USAGE = `usage: assistant-relay backend [options]
  --host H                 address to listen on (default 127.0.0.1)
  --port P                 port; 0 picks a free one (default 8788)
  --db FILE                the backend's SQLite event log (default data/backend.db)
  --token-file FILE        the operator token, created (0600, random) if absent: turns on the admin
                           routes (/api/v1/admin/integrations); without it there are none
  --cors-origin O          browser origins whose pages may call the backend, comma-separated (default none)
  --retention D|off        forget jobs settled and pairings ended longer ago than D and remove their
                           events from the log, e.g. 7d (default 7d); off keeps everything
  --log-level L            fatal, error, warn, info, debug, trace, silent (default info)
       assistant-relay backend integration create [--db FILE] [--provider KIND]
  creates an integration (default provider assistant-relay) in a log no backend has open, and prints
  {"integration_id","provider_kind","relay_token","client_token"}: the tokens are shown this once.
Each flag may also be set as ASSISTANT_RELAY_<FLAG>, e.g. ASSISTANT_RELAY_PORT=8788.`;

const FLAGS = {
  host: { type: 'string' },
  port: { type: 'string' },
  db: { type: 'string' },
  'token-file': { type: 'string' },
  'cors-origin': { type: 'string' },
  retention: { type: 'string' },
  'log-level': { type: 'string' },
} as const;
const INTEGRATION_FLAGS = { db: { type: 'string' }, provider: { type: 'string' } } as const;
const DEFAULT_DB = 'data/backend.db';

function openLog(db: string): EventLog<BackendEvent> {
  return EventLog.open<BackendEvent>({ path: db, streamOf: backendStreamOf });
}

export async function backendCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  if (argv[0] === 'integration') return integrationCommand(argv.slice(1), env);
  const get = readFlags(argv, FLAGS, env);
  const db = get('db') ?? DEFAULT_DB;
  const corsOrigins = parseOrigins('cors-origin', get('cors-origin'));
  const logger = jsonLogger(logLevelOf(get('log-level')));
  const tokenFile = get('token-file');
  const operatorToken = tokenFile === undefined ? undefined : readTokenFile(tokenFile, { create: true });
  const retentionMs = retentionOf(get('retention'));
  const config = { onFatal: exitOnFatal(logger), ...(retentionMs === undefined ? {} : { retentionMs }) };
  const relay = await createBackendRelay({ db, corsOrigins, logger, config, ...(operatorToken === undefined ? {} : { operatorToken }) });
  const url = await relay.listen({ host: get('host') ?? '127.0.0.1', port: integer('port', get('port') ?? '8788', 0, 65535) });
  logger.info({ url, db, epoch: relay.epoch, admin_routes: operatorToken !== undefined, cors_origins: corsOrigins }, 'serving');
  runUntilSignalled(logger, { listening: url }, () => relay.close());
}

async function integrationCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [verb, ...rest] = argv;
  if (verb !== 'create') throw new UsageError(`backend integration takes create, not ${JSON.stringify(verb ?? '')}`);
  const get = readFlags(rest, INTEGRATION_FLAGS, env);
  const log = openLog(get('db') ?? DEFAULT_DB);
  try {
    const backend = await Backend.start(log);
    const created = await backend.integrations.create(get('provider') ?? 'assistant-relay');
    await backend.close();
    if ('refused' in created) throw new UsageError(`--provider: ${created.refused.message}`);
    process.stdout.write(`${JSON.stringify(created)}\n`);
  } finally {
    await log.close();
  }
}
