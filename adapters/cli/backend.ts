/**
 * `assistant-relay backend`: the backend relay (4.1) standalone, on its own event log or as one node of
 * a service on PostgreSQL and a broker; and
 * `assistant-relay backend integration create`, which creates an integration in a log no backend holds
 * (the lock refuses it otherwise) and prints its tokens, once; and `assistant-relay backend
 * pairing-ticket` (pairing-ticket.ts).
 */
import { HEARTBEAT_INTERVAL_MS } from '../../engine/reasoning/config.js';
import { ReasoningEngine } from '../../engine/reasoning/engine.js';
import { REKEY_TIMES_KEPT } from '../../machines/reasoning/integration.js';
import type { Quotas } from '../../machines/reasoning/quotas.js';
import { createBackendRelay, openBackendStore } from '../backend/relay.js';
import { backendSeams } from '../backend/seams.js';
import { UsageError, integer, parseDuration, logLevelOf, parseOrigins, parseProxies, readFlags, retentionOf } from './flags.js';
import { LIVENESS_FLAGS, LIVENESS_USAGE, livenessFlags } from './liveness-flags.js';
import { PAIRING_TICKET_USAGE, pairingTicketCommand } from './pairing-ticket.js';
import { whereOf } from './store-flags.js';
import { exitOnFatal, jsonLogger, readTokenFile, runUntilSignalled } from './service.js';

export const BACKEND_USAGE = `usage: assistant-relay backend [options]
  --host H                 address to listen on (default 127.0.0.1)
  --port P                 port; 0 picks a free one (default 8788)
  --db FILE                the backend's SQLite event log (default data/backend.db): one node
  --store URL              postgres://user@host:port/db instead of --db: the log every node of the
                           service shares (migrations run on start)
  --schema NAME            the store's schema for this service (default assistant_relay)
  --pubsub URL             with --store: nats://host:port or redis://host:port (Streams), the
                           broker that tells nodes of each other's commits at once (without one: each
                           second)
  --namespace NAME         prefix of the broker's subjects or keys for this service (default assistant_relay)
  --pool N                 PostgreSQL connections at most (default 10)
  --store-timeout D        how long to wait for a connection before answering 503 store_unavailable,
                           e.g. 5s (default 5s)
  --store-queue N          decisions that may wait for the store at once; one more is answered 503
                           store_unavailable (default 10000)
  --max-held-integrations N  integrations a node keeps folded beyond those it uses now (default 10000)
  --token-file FILE        the operator token, created (0600, random) if absent: turns on the admin
                           routes (/api/v1/admin/integrations); without it there are none
  --cors-origin O          browser origins whose pages may call the backend, comma-separated (default none)
  --pairing open|ticket    who may create an integration by pairing: ticket (the default), only a client
                           that brings a ticket the operator issued (needs --token-file here or on another
                           node); open, anyone who can reach the backend
  --trust-proxy LIST       reverse proxies whose X-Forwarded-For names the client's address (what the
                           pairing limits count by): addresses, CIDR ranges, loopback, linklocal,
                           uniquelocal, comma-separated (default none: the peer's address)
  --retention D|off        forget jobs settled, integrations revoked (with all they had) and pairings
                           ended longer ago than D and remove their events from the log, e.g. 7d
                           (default 7d); off keeps everything
  --pairing-retention D    forget ended pairings D after their expiry if that is sooner, e.g. 1h
                           (default 1h)
  --max-open-jobs N        open jobs an integration may have; one more is refused 429 (default 32)
  --max-followers N        job followers (…/jobs/ID/events) an integration may hold open on this node
                           (default 64)
  --max-node-followers N   job followers this node holds, all integrations together (default 1024)
${LIVENESS_USAGE}
  --status-interval D      what a plugin says of itself (status, versions) is logged at most once per D;
                           a change sooner is refused 429 (default the heartbeat interval; at most two)
  --max-rekeys-per-hour N  key rotations an integration may ask for in an hour (default 6, at most 32)
  --rekey-replace-after D  an unanswered key rotation stands in the way of a new one for D (default 10m)
  --max-jobs-per-minute N  jobs an integration may create in a minute of the clock; one more is
                           refused 429 (default 60)
  --max-settled-jobs N     settled jobs kept per integration: retention forgets the oldest beyond N
                           before the retention is up (default 1000)
  --max-stream-opens-per-minute N
                           plugin streams an integration may open on this node in a minute; one more
                           is refused 429 (default 10)
  --max-job-bytes N        a job's payload, and its result, at most N bytes of JSON; past it, 413
                           (default 1048576)
  --result-check-timeout D a plain result's check against its job's schema may run D in a worker thread;
                           past it, 422 result_check_too_costly (default 2s, at most 60s)
  --log-level L            fatal, error, warn, info, debug, trace, silent (default info)
       assistant-relay backend integration create [--db FILE | --store URL [--schema NAME]] [--provider KIND]
  creates an integration (default provider assistant-relay) in a log no backend has open (--db), or in
  the shared store while its nodes run (--store), and prints
  {"integration_id","provider_kind","relay_token","client_token"}: the tokens are shown this once.
${PAIRING_TICKET_USAGE}
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
  'max-held-integrations': { type: 'string' },
  'token-file': { type: 'string' },
  'cors-origin': { type: 'string' },
  pairing: { type: 'string' },
  'trust-proxy': { type: 'string' },
  retention: { type: 'string' },
  'max-open-jobs': { type: 'string' },
  'max-followers': { type: 'string' },
  'max-node-followers': { type: 'string' },
  ...LIVENESS_FLAGS,
  'status-interval': { type: 'string' },
  'max-rekeys-per-hour': { type: 'string' },
  'rekey-replace-after': { type: 'string' },
  'max-jobs-per-minute': { type: 'string' },
  'max-settled-jobs': { type: 'string' },
  'max-stream-opens-per-minute': { type: 'string' },
  'pairing-retention': { type: 'string' },
  'max-job-bytes': { type: 'string' },
  'result-check-timeout': { type: 'string' },
  'log-level': { type: 'string' },
} as const;
const INTEGRATION_FLAGS = {
  db: { type: 'string' },
  store: { type: 'string' },
  schema: { type: 'string' },
  provider: { type: 'string' },
} as const;

export async function backendCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  if (argv[0] === 'integration') return integrationCommand(argv.slice(1), env);
  if (argv[0] === 'pairing-ticket') return pairingTicketCommand(argv.slice(1), env);
  const get = readFlags(argv, FLAGS, env);
  const where = whereOf(get);
  const corsOrigins = parseOrigins('cors-origin', get('cors-origin'));
  const logger = jsonLogger(logLevelOf(get('log-level')));
  const tokenFile = get('token-file');
  const operatorToken = tokenFile === undefined ? undefined : readTokenFile(tokenFile, { create: true });
  const retentionMs = retentionOf(get('retention'));
  const pairingRetention = get('pairing-retention');
  const storeQueue = get('store-queue');
  const maxHeld = get('max-held-integrations');
  const maxJobBytes = get('max-job-bytes');
  const liveness = livenessFlags(get);
  const config = {
    onFatal: exitOnFatal(logger),
    ...liveness,
    ...(retentionMs === undefined ? {} : { retentionMs }),
    ...(pairingRetention === undefined ? {} : { pairingRetentionMs: parseDuration('pairing-retention', pairingRetention) }),
    ...(storeQueue === undefined ? {} : { maxQueuedDecisions: integer('store-queue', storeQueue, 1, 10_000_000) }),
    ...(maxHeld === undefined ? {} : { maxHeldIntegrations: integer('max-held-integrations', maxHeld, 1, 10_000_000) }),
    quotas: quotaFlags(get, liveness.heartbeatIntervalMs),
    ...(maxJobBytes === undefined ? {} : { maxJobBytes: integer('max-job-bytes', maxJobBytes, 1024, 256 * 1024 * 1024) }),
  };
  const pairing = get('pairing') ?? 'ticket';
  if (pairing !== 'open' && pairing !== 'ticket') throw new UsageError(`--pairing must be open or ticket, not ${JSON.stringify(pairing)}`);
  const trustProxy = parseProxies('trust-proxy', get('trust-proxy'));
  const checkTimeout = get('result-check-timeout');
  const resultChecks = checkTimeout === undefined ? {} : { timeoutMs: parseDuration('result-check-timeout', checkTimeout, 60_000) };
  const relay = await createBackendRelay({
    ...where.options,
    corsOrigins,
    logger,
    config,
    pairing,
    trustProxy,
    resultChecks,
    ...(operatorToken === undefined ? {} : { operatorToken }),
  });
  const url = await relay.listen({ host: get('host') ?? '127.0.0.1', port: integer('port', get('port') ?? '8788', 0, 65535) });
  logger.info(
    {
      url,
      ...where.said,
      epoch: relay.epoch,
      admin_routes: operatorToken !== undefined,
      cors_origins: corsOrigins,
      pairing,
      trust_proxy: trustProxy,
    },
    'serving',
  );
  if (pairing === 'ticket' && operatorToken === undefined && where.options.store === undefined) {
    logger.warn(
      '--pairing ticket without --token-file: no ticket can be issued, so no pairing can start (give --token-file, or --pairing open)',
    );
  }
  runUntilSignalled(logger, { listening: url }, () => relay.close());
}

/** The quotas the flags set (PROTOCOL.md 6e.18 to 6e.21); the others keep their defaults. */
export function quotaFlags(
  get: (
    name:
      | 'max-open-jobs'
      | 'max-followers'
      | 'max-node-followers'
      | 'status-interval'
      | 'max-rekeys-per-hour'
      | 'rekey-replace-after'
      | 'max-jobs-per-minute'
      | 'max-settled-jobs'
      | 'max-stream-opens-per-minute',
  ) => string | undefined,
  heartbeatIntervalMs = HEARTBEAT_INTERVAL_MS,
): Partial<Quotas> {
  const count = (flag: Parameters<typeof get>[0], key: keyof Quotas, max: number) => {
    const text = get(flag);
    return text === undefined ? {} : { [key]: integer(flag, text, 1, max) };
  };
  const duration = (flag: Parameters<typeof get>[0], key: keyof Quotas, max?: number) => {
    const text = get(flag);
    return text === undefined ? {} : { [key]: parseDuration(flag, text, max) };
  };
  return {
    ...count('max-open-jobs', 'maxOpenJobs', 1_000_000),
    ...count('max-followers', 'maxFollowers', 1_000_000),
    ...count('max-node-followers', 'maxNodeFollowers', 1_000_000),
    // Two heartbeat intervals: a plugin waits out the Retry-After, and missed heartbeats (three by default) show it offline.
    ...duration('status-interval', 'statusIntervalMs', 2 * heartbeatIntervalMs),
    ...count('max-rekeys-per-hour', 'maxRekeysPerHour', REKEY_TIMES_KEPT),
    ...duration('rekey-replace-after', 'rekeyReplaceAfterMs'),
    ...count('max-jobs-per-minute', 'maxJobsPerMinute', 1_000_000),
    ...count('max-settled-jobs', 'maxSettledJobs', 100_000_000),
    ...count('max-stream-opens-per-minute', 'maxStreamsPerMinute', 1_000_000),
  };
}

async function integrationCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [verb, ...rest] = argv;
  if (verb !== 'create') throw new UsageError(`backend integration takes create, not ${JSON.stringify(verb ?? '')}`);
  const get = readFlags(rest, INTEGRATION_FLAGS, env);
  const { options } = whereOf((flag) => (flag in INTEGRATION_FLAGS ? get(flag as keyof typeof INTEGRATION_FLAGS) : undefined));
  const log = await openBackendStore(options);
  try {
    const backend = await ReasoningEngine.start(backendSeams(log));
    const created = await backend.integrations.create(get('provider') ?? 'assistant-relay');
    await backend.close();
    if ('refused' in created) throw new UsageError(`--provider: ${created.refused.message}`);
    process.stdout.write(`${JSON.stringify(created)}\n`);
  } finally {
    await log.close();
  }
}
