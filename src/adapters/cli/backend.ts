/**
 * `assistant-relay backend`: the backend relay (4.1) standalone, on its own event log or as one node of
 * a service on PostgreSQL and a broker; and
 * `assistant-relay backend integration create`, which creates an integration in a log no backend holds
 * (the lock refuses it otherwise) and prints its tokens, once.
 */
import { Backend } from '../../engine/backend/backend.js';
import { DEFAULT_SCHEMA, SCHEMA_NAME } from '../../storage/postgres/connection.js';
import { createBackendRelay, openBackendStore, type BackendRelayOptions } from '../backend-relay.js';
import { DEFAULT_NAMESPACE, NAMESPACE } from '../brokers/broker.js';
import { BROKER_SCHEMES } from '../brokers/connect.js';
import { UsageError, integer, parseDuration, logLevelOf, parseOrigins, readFlags, retentionOf } from './flags.js';
import { exitOnFatal, jsonLogger, readTokenFile, runUntilSignalled } from './service.js';

export const BACKEND_USAGE = `usage: assistant-relay backend [options]
  --host H                 address to listen on (default 127.0.0.1)
  --port P                 port; 0 picks a free one (default 8788)
  --db FILE                the backend's SQLite event log (default data/backend.db): one node
  --store URL              postgres://user@host:port/db instead of --db: the log every node of the
                           service shares (migrations run on start)
  --schema NAME            the store's schema for this service (default assistant_relay)
  --pubsub URL             with --store: nats://host:port (JetStream) or redis://host:port (Streams), the
                           broker that tells nodes of each other's commits at once (without one: each
                           second)
  --namespace NAME         prefix of the broker's subjects or keys for this service (default assistant_relay)
  --pool N                 PostgreSQL connections at most (default 10)
  --store-timeout D        how long to wait for a connection before answering 503 store_unavailable,
                           e.g. 5s (default 5s)
  --store-queue N          decisions that may wait for the store at once; one more is answered 503
                           store_unavailable (default 10000)
  --token-file FILE        the operator token, created (0600, random) if absent: turns on the admin
                           routes (/api/v1/admin/integrations); without it there are none
  --cors-origin O          browser origins whose pages may call the backend, comma-separated (default none)
  --retention D|off        forget jobs settled and pairings ended longer ago than D and remove their
                           events from the log, e.g. 7d (default 7d); off keeps everything
  --max-job-bytes N        a job's payload, and its result, at most N bytes of JSON; past it, 413
                           (default 1048576)
  --log-level L            fatal, error, warn, info, debug, trace, silent (default info)
       assistant-relay backend integration create [--db FILE | --store URL [--schema NAME]] [--provider KIND]
  creates an integration (default provider assistant-relay) in a log no backend has open (--db), or in
  the shared store while its nodes run (--store), and prints
  {"integration_id","provider_kind","relay_token","client_token"}: the tokens are shown this once.
Each flag may also be set as ASSISTANT_RELAY_<FLAG>, e.g. ASSISTANT_RELAY_PORT=8788.`;

const FLAGS = {
  host: { type: 'string' },
  port: { type: 'string' },
  db: { type: 'string' },
  store: { type: 'string' },
  schema: { type: 'string' },
  pubsub: { type: 'string' },
  namespace: { type: 'string' },
  pool: { type: 'string' },
  'store-timeout': { type: 'string' },
  'store-queue': { type: 'string' },
  'token-file': { type: 'string' },
  'cors-origin': { type: 'string' },
  retention: { type: 'string' },
  'max-job-bytes': { type: 'string' },
  'log-level': { type: 'string' },
} as const;
const INTEGRATION_FLAGS = { db: { type: 'string' }, store: { type: 'string' }, schema: { type: 'string' }, provider: { type: 'string' } } as const;
const DEFAULT_DB = 'data/backend.db';

export async function backendCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  if (argv[0] === 'integration') return integrationCommand(argv.slice(1), env);
  const get = readFlags(argv, FLAGS, env);
  const where = whereOf(get);
  const corsOrigins = parseOrigins('cors-origin', get('cors-origin'));
  const logger = jsonLogger(logLevelOf(get('log-level')));
  const tokenFile = get('token-file');
  const operatorToken = tokenFile === undefined ? undefined : readTokenFile(tokenFile, { create: true });
  const retentionMs = retentionOf(get('retention'));
  const storeQueue = get('store-queue');
  const maxJobBytes = get('max-job-bytes');
  const config = {
    onFatal: exitOnFatal(logger),
    ...(retentionMs === undefined ? {} : { retentionMs }),
    ...(storeQueue === undefined ? {} : { maxQueuedDecisions: integer('store-queue', storeQueue, 1, 10_000_000) }),
    ...(maxJobBytes === undefined ? {} : { maxJobBytes: integer('max-job-bytes', maxJobBytes, 1024, 256 * 1024 * 1024) }),
  };
  const relay = await createBackendRelay({ ...where.options, corsOrigins, logger, config, ...(operatorToken === undefined ? {} : { operatorToken }) });
  const url = await relay.listen({ host: get('host') ?? '127.0.0.1', port: integer('port', get('port') ?? '8788', 0, 65535) });
  logger.info({ url, ...where.said, epoch: relay.epoch, admin_routes: operatorToken !== undefined, cors_origins: corsOrigins }, 'serving');
  runUntilSignalled(logger, { listening: url }, () => relay.close());
}

/** The log the flags name, and what the `serving` line says of it (never a password). */
function whereOf(get: (name: keyof typeof FLAGS) => string | undefined): { options: Pick<BackendRelayOptions, 'db' | 'store' | 'broker'>; said: Record<string, unknown> } {
  const store = get('store');
  const pubsub = get('pubsub');
  if (store === undefined) {
    for (const flag of ['pubsub', 'schema', 'namespace', 'pool', 'store-timeout', 'store-queue'] as const) if (get(flag) !== undefined) throw new UsageError(`--${flag} goes with --store`);
    const db = get('db') ?? DEFAULT_DB;
    return { options: { db }, said: { db } };
  }
  if (get('db') !== undefined) throw new UsageError('--db and --store name two logs: give one');
  const storeUrl = urlOf('store', store, ['postgres:', 'postgresql:']);
  const schema = get('schema') ?? DEFAULT_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) throw new UsageError(`--schema must be lowercase letters, digits and _ (at most 63), not ${JSON.stringify(schema)}`);
  const namespace = get('namespace') ?? DEFAULT_NAMESPACE;
  if (!NAMESPACE.test(namespace)) throw new UsageError(`--namespace must be letters, digits, _ and - (at most 64), not ${JSON.stringify(namespace)}`);
  const pool = get('pool');
  const timeout = get('store-timeout');
  const brokerUrl = pubsub === undefined ? undefined : urlOf('pubsub', pubsub, BROKER_SCHEMES);
  const options = {
    store: {
      url: store,
      schema,
      ...(pool === undefined ? {} : { poolSize: integer('pool', pool, 1, 1_000) }),
      ...(timeout === undefined ? {} : { connectTimeoutMs: parseDuration('store-timeout', timeout) }),
    },
    ...(brokerUrl === undefined ? {} : { broker: { url: brokerUrl.href, namespace } }),
  };
  return { options, said: { store: withoutPassword(storeUrl), schema, ...(brokerUrl === undefined ? {} : { pubsub: withoutPassword(brokerUrl), namespace }) } };
}

function urlOf(flag: string, text: string, schemes: readonly string[]): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--${flag} must be a URL (${schemes.map((s) => `${s}//`).join(' or ')}…), not ${JSON.stringify(text)}`);
  }
  if (!schemes.includes(url.protocol)) throw new UsageError(`--${flag} must start ${schemes.map((s) => `${s}//`).join(' or ')}, not ${url.protocol}//`);
  return url;
}

function withoutPassword(url: URL): string {
  const shown = new URL(url.href);
  if (shown.password !== '') shown.password = '***';
  return shown.href;
}

async function integrationCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [verb, ...rest] = argv;
  if (verb !== 'create') throw new UsageError(`backend integration takes create, not ${JSON.stringify(verb ?? '')}`);
  const get = readFlags(rest, INTEGRATION_FLAGS, env);
  const { options } = whereOf((flag) => (flag in INTEGRATION_FLAGS ? get(flag as keyof typeof INTEGRATION_FLAGS) : undefined));
  const log = await openBackendStore(options);
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
