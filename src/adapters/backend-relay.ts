/**
 * The embedding API of the backend relay (4.1), as `host.ts` is the assistant host's: its event log, its
 * engine and its HTTP surface in one value that listens and closes in the right order.
 *
 *   const relay = await createBackendRelay({ db: './data/backend.db' });
 *   const url = await relay.listen({ port: 8788 });
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { tokenDigest } from '../protocol/index.js';
import { Backend, type BackendConfig } from '../engine/backend/backend.js';
import { backendStreamOf, type BackendEvent } from '../machines/backend-events.js';
import { EventLog } from '../storage/event-log.js';
import { buildBackendServer } from './backend/server.js';
import type { ListenOptions } from './host.js';
import { HTTP_LIMITS } from './http/limits.js';
import { checkInspection, startInspection, type Inspection, type InspectOption } from './inspector/process.js';
import type { StatelyInspector } from '../visualizations/inspector/stately.js';

export interface BackendRelayOptions {
  /** Path of the backend's SQLite event log (created if absent). */
  readonly db: string;
  /** The operator's token: turns on the admin routes (`/api/v1/admin/integrations`); without it there are none. */
  readonly operatorToken?: string;
  /** Browser origins whose pages may call the backend (CORS preflights are answered for them). None by default. */
  readonly corsOrigins?: readonly string[];
  /** A pino-compatible logger; none by default. Failures nobody awaits go to it unless `config.onError` says otherwise. */
  readonly logger?: FastifyBaseLogger;
  /** The engine's settings: clock, lease and heartbeat intervals, the `PubSub`, what happens when the log cannot be written. */
  readonly config?: BackendConfig;
  /**
   * The inspector: a web page of the log's jobs, integrations and pairings, each with its statechart, followed
   * live (`inspectorUrl`). `true`: on 127.0.0.1, any free port; on an address other than loopback it asks
   * for `operatorToken` (and needs one). Needs `db` to be a file.
   */
  readonly inspect?: InspectOption;
  /** Reports each job, integration and pairing to this inspector of `@statelyai/inspect` as an actor, and each committed event that moves one. Needs `db` to be a file. */
  readonly statelyInspector?: StatelyInspector;
}

export interface BackendRelay {
  /** This process's epoch. */
  readonly epoch: string;
  readonly backend: Backend;
  /** The fastify instance, for `inject()`. */
  readonly server: FastifyInstance;
  /** Starts serving; resolves with the base URL. */
  listen(options?: ListenOptions): Promise<string>;
  /** Where the inspector's page is, when `inspect` asked for it. */
  readonly inspectorUrl: string | undefined;
  /** Late requests get 503 while the streams end; then the server is done, the log closes, then the inspector. */
  close(): Promise<void>;
}

export async function createBackendRelay(options: BackendRelayOptions): Promise<BackendRelay> {
  const inspection = { db: options.db, inspect: options.inspect, statelyInspector: options.statelyInspector, token: options.operatorToken };
  checkInspection(inspection);
  const log = EventLog.open<BackendEvent>({ path: options.db, streamOf: backendStreamOf });
  const logger = options.logger;
  let backend: Backend;
  try {
    backend = await Backend.start(log, {
      ...(logger === undefined ? {} : { onError: (error: unknown, { what }: { what: string }) => logger.error({ err: error }, `${what} failed`) }),
      ...options.config,
    });
  } catch (error) {
    await log.close();
    throw error;
  }
  let server: FastifyInstance | undefined;
  let inspector: Inspection | undefined;
  try {
    server = await buildBackendServer(backend, {
      limits: HTTP_LIMITS,
      ...(logger === undefined ? {} : { logger }),
      ...(options.corsOrigins === undefined ? {} : { corsOrigins: options.corsOrigins }),
      ...(options.operatorToken === undefined ? {} : { operatorTokenDigest: tokenDigest(options.operatorToken) }),
    });
    inspector = await startInspection({ ...inspection, epoch: backend.epoch, ...(logger === undefined ? {} : { logger }) });
  } catch (error) {
    await server?.close();
    await backend.close();
    await log.close();
    throw error;
  }
  if (inspector !== undefined) log.onCommit(() => inspector.committed());
  let closed: Promise<void> | undefined;
  return {
    epoch: backend.epoch,
    backend,
    server,
    listen: (listen = {}) => server.listen({ host: listen.host ?? '127.0.0.1', port: listen.port ?? 0 }),
    inspectorUrl: inspector?.url,
    close() {
      closed ??= (async () => {
        const closing = server.close();
        await backend.close();
        await closing;
        await log.close();
        await inspector?.close();
      })();
      return closed;
    },
  };
}
