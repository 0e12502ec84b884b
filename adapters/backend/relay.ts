/**
 * The embedding API of the backend relay (4.1), as `host.ts` is the assistant host's: its event log, its
 * engine and its HTTP surface in one value that listens and closes in the right order.
 *
 *   const relay = await createBackendRelay({ db: './data/backend.db' });
 *   const url = await relay.listen({ port: 8788 });
 *
 * Several relays are one service when they share a PostgreSQL store and a broker (a node each):
 *
 *   await createBackendRelay({ store: { url: 'postgres://…/relay' }, broker: { url: 'nats://…' } });
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { tokenDigest } from '../../protocol/index.js';
import { ReasoningEngine } from '../../engine/reasoning/engine.js';
import { systemClock } from '../../engine/core/clock.js';
import { partitionsOfOneLog } from '../../engine/reasoning/log-conversion.js';
import { PartitionedBackendLog } from '../../engine/reasoning/partitioned-log.js';
import { backendStreamOf, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { EventLog } from '../../storage/event-log.js';
import { DEFAULT_SCHEMA, type PostgresOptions } from '../../storage/postgres/connection.js';
import { convertOneLog, type Conversion } from '../../storage/postgres/one-log.js';
import { PgPartitionedLog } from '../../storage/postgres/partitioned-log.js';
import { SERVICE_PARTITION } from '../../storage/partitions.js';
import { observeBackend, storeAppendTimer } from './metrics.js';
import { ResultChecks, type ResultCheckLimits } from './result-checks.js';
import { backendSeams, type BackendRelayConfig, type BackendStore } from './seams.js';
import { buildBackendServer } from './server.js';
import type { BrokerPubSub } from '../brokers/broker.js';
import { connectBroker } from '../brokers/connect.js';
import type { ListenOptions } from '../http/app.js';
import { HTTP_LIMITS } from '../http/limits.js';
import { checkInspection, startInspection, type Inspection, type InspectOption } from '../inspector/process.js';
import type { StatelyInspector } from '../inspector/stately.js';

/** A store several nodes share: PostgreSQL (its tables in `schema`, default `assistant_relay`). */
export type SharedStoreOptions = Omit<PostgresOptions, 'schema'> & { readonly schema?: string };

export interface BackendRelayOptions {
  /** Path of the backend's SQLite event log (created if absent): one node. Either this or `store`. */
  readonly db?: string;
  /** PostgreSQL, shared by every node of the service: its log, heartbeats and migrations. Either this or `db`. */
  readonly store?: SharedStoreOptions;
  /** With `store`: the broker that tells nodes at once of each other's commits and streams (`nats://`, `redis://`). Without one they look every second. */
  readonly broker?: { readonly url: string; readonly namespace?: string };
  /** The operator's token: turns on the admin routes (`/api/v1/admin/integrations`); without it there are none. */
  readonly operatorToken?: string;
  /** Browser origins whose pages may call the backend (CORS preflights are answered for them). None by default. */
  readonly corsOrigins?: readonly string[];
  /**
   * Who may create an integration by pairing (PROTOCOL.md 7.8): `ticket` (the default), only a start that
   * brings a ticket the operator issued (`POST /api/v1/admin/pairing-tickets`, which needs `operatorToken`
   * on this node or another of the service); `open`, anyone who can reach the backend.
   */
  readonly pairing?: 'open' | 'ticket';
  /**
   * Reverse proxies in front of the backend (addresses, CIDR ranges, or `loopback`, `linklocal`,
   * `uniquelocal`) whose `X-Forwarded-For` names the client's address, what the pairing limits count
   * by. None by default: the peer's address is the source.
   */
  readonly trustProxy?: readonly string[];
  /** A pino-compatible logger; none by default. Failures nobody awaits go to it unless `config.onError` says otherwise. */
  readonly logger?: FastifyBaseLogger;
  /**
   * How plain results are checked against their jobs' schemas (PROTOCOL.md 6.12): a costly check runs in a
   * worker thread for at most `timeoutMs` (default 2 s), on `workers` threads (default 2) with `maxQueued`
   * waiting (default 16), one per integration. `config.resultChecker` replaces all of it.
   */
  readonly resultChecks?: Partial<ResultCheckLimits>;
  /** The engine's settings, and what its seams are chosen by: the clock, the `PubSub`, what happens when the log cannot be written. */
  readonly config?: BackendRelayConfig;
  /**
   * The inspector: a web page of the log's jobs, integrations and pairings, each with its statechart, followed
   * live (`inspectorUrl`). `true`: on 127.0.0.1, any free port; on an address other than loopback it asks
   * for `operatorToken` (and needs one). Needs `db` to be a file (not `store`).
   */
  readonly inspect?: InspectOption;
  /** Reports each job, integration and pairing to this inspector of `@statelyai/inspect` as an actor, and each committed event that moves one. Needs `db` to be a file (not `store`). */
  readonly statelyInspector?: StatelyInspector;
}

export interface BackendRelay {
  /** This process's epoch. */
  readonly epoch: string;
  readonly backend: ReasoningEngine;
  /** The fastify instance, for `inject()`. */
  readonly server: FastifyInstance;
  /** Starts serving; resolves with the base URL. */
  listen(options?: ListenOptions): Promise<string>;
  /** Where the inspector's page is, when `inspect` asked for it. */
  readonly inspectorUrl: string | undefined;
  /** What this node and its stores are like now (`/healthz` answers it). */
  health(): Promise<RelayHealth>;
  /**
   * Drains the node: its plugins' streams are told to reconnect (elsewhere, behind a load balancer), late
   * requests get 503 `shutting_down` while those under way finish; then the server is done, the log
   * closes, then the inspector. What SIGTERM does.
   */
  close(): Promise<void>;
}

export interface RelayHealth {
  readonly ok: boolean;
  readonly epoch: string;
  /** This node: whether it drains, and how far it has folded the log. */
  readonly node: { readonly draining: boolean; readonly position: number };
  readonly store:
    | { readonly kind: 'sqlite' }
    | { readonly kind: 'postgres'; readonly reachable: boolean; readonly head?: number; readonly error?: string };
  readonly broker?: { readonly kind: 'nats' | 'redis'; readonly connected: boolean };
}

/** What opening a store tells its opener: a connection lost while idle, what the conversion of the one log passed over or did. */
export interface StoreReports {
  readonly onIdleError?: (error: unknown) => void;
  readonly report?: (error: unknown, context: { readonly what: string }) => void;
  readonly converted?: (conversion: Conversion) => void;
}

/**
 * The backend's log that `db` or `store` names: an SQLite file, or PostgreSQL (its schema migrated, and the
 * one log of a deployment from before the partitions converted into them, once, before any engine starts).
 */
export async function openBackendStore(
  where: Pick<BackendRelayOptions, 'db' | 'store'>,
  reports: StoreReports = {},
): Promise<BackendStore> {
  if (where.store === undefined) return EventLog.open<BackendEvent>({ path: where.db!, streamOf: backendStreamOf });
  const store = await PgPartitionedLog.open<BackendEvent>({
    schema: DEFAULT_SCHEMA,
    ...where.store,
    streamOf: backendStreamOf,
    ...(reports.onIdleError === undefined ? {} : { onIdleError: reports.onIdleError }),
  });
  const report = reports.report ?? ((error, { what }) => process.emitWarning(`assistant-relay backend: ${what} failed: ${String(error)}`));
  try {
    const conversion = await convertOneLog<BackendEvent>(store.connections, (log) => partitionsOfOneLog(log, report), systemClock.now());
    // An empty one log (a deployment that began partitioned) is recorded as converted: nothing to tell.
    if (conversion !== undefined && conversion.position > 0) reports.converted?.(conversion);
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

export async function createBackendRelay(options: BackendRelayOptions): Promise<BackendRelay> {
  if ((options.db === undefined) === (options.store === undefined))
    throw new TypeError('a backend relay takes either db (SQLite, one node) or store (PostgreSQL, shared)');
  if (options.broker !== undefined && options.store === undefined)
    throw new TypeError('broker carries news between nodes that share a store: give store too');
  if (options.store !== undefined && (options.inspect || options.statelyInspector !== undefined))
    throw new TypeError('inspect and statelyInspector read an SQLite log file: they take db, not store');
  const inspection = {
    db: options.db ?? '',
    inspect: options.inspect,
    statelyInspector: options.statelyInspector,
    token: options.operatorToken,
  };
  checkInspection(inspection);
  const logger = options.logger;
  const report = (error: unknown, what: string) =>
    logger === undefined ? process.emitWarning(`assistant-relay backend: ${what}: ${String(error)}`) : logger.warn({ err: error }, what);
  const log = await openBackendStore(options, {
    onIdleError: (error) => report(error, 'a PostgreSQL connection was lost'),
    report: (error, { what }) => report(error, what),
    converted: ({ position, partitions }) =>
      logger?.info(`converted the one log (up to position ${position}) into ${partitions} partitions; its tables stay, read-only`),
  });
  let broker: BrokerPubSub | undefined;
  let backend: ReasoningEngine;
  const checks = new ResultChecks(options.resultChecks);
  // This relay's own: several relays may run in one process.
  const metrics = new Registry();
  try {
    if (options.broker !== undefined) broker = await connectBroker({ ...options.broker, report });
    const config: BackendRelayConfig = {
      ...(logger === undefined
        ? {}
        : { onError: (error: unknown, { what }: { what: string }) => logger.error({ err: error }, `${what} failed`) }),
      resultChecker: checks,
      ...options.config,
      ...(options.pairing === undefined ? {} : { pairing: options.pairing }),
    };
    const seams = backendSeams(log, config, broker, log instanceof EventLog ? undefined : storeAppendTimer(metrics));
    backend = await ReasoningEngine.start(seams, config);
    const shared = seams.log instanceof PartitionedBackendLog ? { log: seams.log } : undefined;
    observeBackend(metrics, { backend, checks, ...(shared === undefined ? {} : { shared }), ...(broker === undefined ? {} : { broker }) });
  } catch (error) {
    await broker?.close();
    await log.close();
    await checks.close();
    throw error;
  }
  let draining = false;
  const health = async (): Promise<RelayHealth> => {
    const node = { draining, position: backend.position };
    const brokerHealth = broker === undefined ? {} : { broker: broker.health };
    if (log instanceof EventLog) return { ok: !draining, epoch: backend.epoch, node, store: { kind: 'sqlite' }, ...brokerHealth };
    try {
      // The service partition's newest version: a read that needs the store to answer.
      const head = (await log.versions([SERVICE_PARTITION])).get(SERVICE_PARTITION) ?? 0;
      return { ok: !draining, epoch: backend.epoch, node, store: { kind: 'postgres', reachable: true, head }, ...brokerHealth };
    } catch (error) {
      return {
        ok: false,
        epoch: backend.epoch,
        node,
        store: { kind: 'postgres', reachable: false, error: (error as Error).message },
        ...brokerHealth,
      };
    }
  };
  let server: FastifyInstance | undefined;
  let inspector: Inspection | undefined;
  try {
    server = await buildBackendServer(backend, {
      limits: HTTP_LIMITS,
      health,
      metrics,
      ...(logger === undefined ? {} : { logger }),
      ...(options.corsOrigins === undefined ? {} : { corsOrigins: options.corsOrigins }),
      ...(options.trustProxy === undefined ? {} : { trustProxy: options.trustProxy }),
      ...(options.operatorToken === undefined ? {} : { operatorTokenDigest: tokenDigest(options.operatorToken) }),
    });
    inspector = await startInspection({ ...inspection, epoch: backend.epoch, ...(logger === undefined ? {} : { logger }) });
  } catch (error) {
    await server?.close();
    await backend.close();
    await broker?.close();
    await log.close();
    await checks.close();
    throw error;
  }
  if (inspector !== undefined && log instanceof EventLog) log.onCommit(() => inspector.committed());
  let closed: Promise<void> | undefined;
  return {
    epoch: backend.epoch,
    backend,
    server,
    listen: (listen = {}) => server.listen({ host: listen.host ?? '127.0.0.1', port: listen.port ?? 0 }),
    inspectorUrl: inspector?.url,
    health,
    close() {
      closed ??= (async () => {
        draining = true;
        const closing = server.close();
        await backend.close();
        await closing;
        await checks.close();
        await broker?.close();
        await log.close();
        await inspector?.close();
      })();
      return closed;
    },
  };
}
