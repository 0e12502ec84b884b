/**
 * The embedding API: an assistant host process gets a running relay in a few lines.
 *
 *   const host = await createAssistantHost({ db: './data/relay.db', token, agent });
 *   const url = await host.listen({ port: 8787 });
 *
 * With `backend`, the same process also serves the reasoning channel: a plugin takes the integration's
 * jobs from a backend relay and answers them with your reasoner, until `close()`.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import type { Agent } from '../../engine/chat/agent.js';
import type { CallbackTransport } from '../../engine/chat/callback.js';
import type { Clock, IdSource } from '../../engine/core/clock.js';
import { ChatEngine, type ChatEngineConfig } from '../../engine/chat/engine.js';
import type { DeliveryStats, SessionView } from '../../engine/chat/view.js';
import type { Outcome } from '../../machines/chat/commands.js';
import { isUrgent, streamOf, type DomainEvent, type Form } from '../../machines/chat/events.js';
import type { PortRange } from '../../protocol/port-ranges.js';
import { CallbackPolicy, type Resolver } from '../callback/policy.js';
import { httpCallbackTransport, type CaCertificates } from '../callback/transport.js';
import type { SessionLimits } from '../../machines/chat/task-session.js';
import { EventLog } from '../../storage/event-log.js';
import { BUILTIN_AGENTS, type BuiltinAgentName } from '../agents/index.js';
import { httpLimits } from '../http/limits.js';
import type { ListenOptions } from '../http/app.js';
import { startPlugin, type Plugin, type PluginOptions } from '../plugin/index.js';
import type { Reasoner } from '../reasoners/reasoner.js';
import { observeHost } from './metrics.js';
import { buildServer } from './server.js';
import { checkInspection, startInspection, type Inspection, type InspectOption } from '../inspector/process.js';
import type { StatelyInspector } from '../inspector/stately.js';

export interface AssistantHostOptions {
  /** Path of the SQLite event log (created if absent). */
  readonly db: string;
  /** The bearer token clients present on `/v1/incoming` and `/v1/events`. */
  readonly token: string;
  /** Your agent, or the name of a built-in one. */
  readonly agent: Agent | BuiltinAgentName;
  /** The form new sessions take: A (tasks, a reply stream; the default) or B (a conversation over callbacks). */
  readonly form?: Form;
  /** Callback origins allowed besides loopback, e.g. `https://desktop.example.com`. */
  readonly callbackAllowlist?: readonly string[];
  /** Loopback callback URLs that no allowlist entry names: allowed (the default, as the spec's reference plugins do) or not. */
  readonly callbackLoopback?: boolean;
  /** With `callbackLoopback` on, only these ports and ranges, e.g. `[8080, [9000, 9100]]`. Default: every port. */
  readonly callbackLoopbackPorts?: ReadonlyArray<number | PortRange>;
  /** How callback host names are resolved (default: the system resolver). For tests and custom DNS. */
  readonly resolve?: Resolver;
  /** How long one lookup of a callback host name may take. Default 2 s. */
  readonly callbackLookupTimeoutMs?: number;
  /** Each callback attempt's timeout. Default 5 s (Part 8). */
  readonly callbackTimeoutMs?: number;
  /** Certificates (PEM) trusted for https callbacks besides Node's bundled roots: a receiver's private CA. */
  readonly callbackCa?: CaCertificates;
  /** Replaces the HTTP callback transport entirely (its URL checks included): for a host with its own egress. */
  readonly callbackTransport?: CallbackTransport;
  /** `normal` (default) survives a process crash; `full` also a power loss, at an fsync per commit. */
  readonly synchronous?: 'normal' | 'full';
  /** End a session after this long without activity. Default 24 h. */
  readonly sessionIdleTtlMs?: number;
  /** `: keep-alive` interval on idle streams. Default 20 s. */
  readonly keepaliveMs?: number;
  /** Live readers allowed per session before 429. Default 4. */
  readonly maxReadersPerSession?: number;
  /** A reader with more than this queued is disconnected (it resumes from its cursor). Default 1 MiB. */
  readonly readerMaxQueuedBytes?: number;
  /** Open streams in the process, all sessions together, before 503 `too_many_streams`. Default 512. */
  readonly maxStreams?: number;
  /** A request's headers must arrive within this, else 408 and the connection closes. Default 10 s. */
  readonly headersTimeoutMs?: number;
  /** A whole request, body included, must arrive within this (at least `headersTimeoutMs`). Default 30 s. */
  readonly requestTimeoutMs?: number;
  /** A kept-alive connection with no request in progress is closed after this. Default 5 s. */
  readonly connectionIdleTimeoutMs?: number;
  /** Retention (backlog replies and bytes, evicted-task ledger) and agent memory bounds. */
  readonly limits?: Partial<SessionLimits>;
  /** Committed events between two snapshots of the folded state (a start folds only what follows the newest). Default 50,000. */
  readonly snapshotEveryEvents?: number;
  /** Sessions that ended (and, with `backend`, the plugin's jobs closed) longer ago than this are forgotten and their events removed from the log. Default 7 days; `Infinity` keeps everything. */
  readonly retentionMs?: number;
  /** A pino-compatible logger; none by default. */
  readonly logger?: FastifyBaseLogger;
  readonly clock?: Clock;
  readonly ids?: IdSource;
  /** Called if the event log cannot be written. Default: crash, so that a restart folds the log again. */
  readonly onFatal?: (error: unknown) => void;
  /** The reasoning channel too: a plugin taking this integration's jobs from a backend relay (PROTOCOL.md 6d). */
  readonly backend?: ReasoningChannelOptions;
  /** Browser origins (`https://app.example`) whose pages may call the host: CORS preflights are answered for them. None by default. */
  readonly corsOrigins?: readonly string[];
  /**
   * The inspector: a web page of the log's sessions, tasks and deliveries, each with its statechart, followed
   * live (`inspectorUrl`). `true`: on 127.0.0.1, any free port; on an address other than loopback it asks
   * for `token`. Needs `db` to be a file.
   */
  readonly inspect?: InspectOption;
  /** Reports each session, task and delivery to this inspector of `@statelyai/inspect` as an actor, and each committed event that moves one. Needs `db` to be a file. */
  readonly statelyInspector?: StatelyInspector;
}

export interface ReasoningChannelOptions {
  /** The backend relay's base URL. */
  readonly url: string;
  readonly integration: string;
  /** The integration's RELAY_TOKEN (never logged). */
  readonly relayToken: string;
  readonly reasoner: Reasoner;
  /** The plugin's own event log. Default: next to `db`, `relay.db` → `relay.plugin.db`. */
  readonly db?: string;
  /** Default `assistant-relay`. */
  readonly providerKind?: string;
  /** Jobs run at once. Default 4. */
  readonly maxConcurrentJobs?: number;
  /** The pairing's keys (as `PluginOptions.keys`): with them, BYO jobs are opened and answered sealed. */
  readonly keys?: PluginOptions['keys'];
  /** Takes the key rotations the client asks for (as `PluginOptions.rotate`; `AssistantKeys.rotate` keeps them in its keys file). */
  readonly rotate?: PluginOptions['rotate'];
}

export interface AssistantHost {
  /** This process's epoch: the first part of every event id it issues. */
  readonly epoch: string;
  /** The fastify instance, for `inject()` or for adding routes of your own. */
  readonly server: FastifyInstance;
  /** Starts serving; resolves with the base URL. */
  listen(options?: ListenOptions): Promise<string>;
  /** Ends a session: pending tasks settle `errored`/`session_ended`; its streams close; later messages are ignored. */
  endSession(sessionId: string): Promise<boolean>;
  /**
   * Adds a message of the agent's own to a Form B conversation, posted to `{callback}/tasks/{a fresh UUID}`.
   * Resolves `queued` once it is in the outbox, or `dropped` for a Form A or ended session.
   */
  message(sessionId: string, text: string, options?: { readonly message_id?: string }): Promise<Outcome>;
  /** What the host knows of a session, or undefined if it never saw it. */
  session(sessionId: string): SessionView | undefined;
  /** Callback deliveries of all sessions: queued, succeeded, abandoned. */
  deliveryStats(): DeliveryStats;
  sessionIds(): string[];
  /** Every event as it is committed to the log. Returns an unsubscribe function. */
  onEvent(listener: (event: DomainEvent) => void): () => void;
  /** The reasoning channel's plugin, when the host was given a `backend`. */
  readonly plugin: Plugin | undefined;
  /** Where the inspector's page is, when `inspect` asked for it. */
  readonly inspectorUrl: string | undefined;
  /** Ends every stream, stops the plugin (its running jobs get its stop grace), stops serving, closes the log, then the inspector. */
  close(): Promise<void>;
}

export async function createAssistantHost(options: AssistantHostOptions): Promise<AssistantHost> {
  const agent = typeof options.agent === 'string' ? BUILTIN_AGENTS[options.agent] : options.agent;
  if (agent === undefined) throw new TypeError(`unknown agent ${String(options.agent)}`);
  const inspection = { db: options.db, inspect: options.inspect, statelyInspector: options.statelyInspector, token: options.token };
  checkInspection(inspection);
  const limits = httpLimits({
    ...(options.maxStreams !== undefined ? { maxStreams: options.maxStreams } : {}),
    ...(options.headersTimeoutMs !== undefined ? { headersTimeoutMs: options.headersTimeoutMs } : {}),
    ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    ...(options.connectionIdleTimeoutMs !== undefined ? { connectionIdleTimeoutMs: options.connectionIdleTimeoutMs } : {}),
  });
  const log = EventLog.open<DomainEvent>({
    path: options.db,
    streamOf,
    urgent: isUrgent,
    ...(options.synchronous ? { synchronous: options.synchronous } : {}),
  });
  let engine: ChatEngine;
  let callbacks: CallbackPolicy;
  try {
    callbacks = new CallbackPolicy({
      allowlist: options.callbackAllowlist ?? [],
      ...(options.callbackLoopback !== undefined ? { loopback: options.callbackLoopback } : {}),
      ...(options.callbackLoopbackPorts ? { loopbackPorts: options.callbackLoopbackPorts } : {}),
      ...(options.resolve ? { resolve: options.resolve } : {}),
      ...(options.callbackLookupTimeoutMs !== undefined ? { lookupTimeoutMs: options.callbackLookupTimeoutMs } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
    });
    const transport =
      options.callbackTransport ??
      httpCallbackTransport({
        policy: callbacks,
        ...(options.callbackTimeoutMs !== undefined ? { timeoutMs: options.callbackTimeoutMs } : {}),
        ...(options.callbackCa !== undefined ? { ca: options.callbackCa } : {}),
        ...(options.clock ? { clock: options.clock } : {}),
      });
    engine = await ChatEngine.start(log, {
      agent,
      transport,
      ...(options.form ? { form: options.form } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.ids ? { ids: options.ids } : {}),
      ...(options.sessionIdleTtlMs !== undefined ? { sessionIdleTtlMs: options.sessionIdleTtlMs } : {}),
      ...(options.keepaliveMs !== undefined ? { keepaliveMs: options.keepaliveMs } : {}),
      ...(options.maxReadersPerSession !== undefined ? { maxReadersPerSession: options.maxReadersPerSession } : {}),
      ...(options.readerMaxQueuedBytes !== undefined ? { readerMaxQueuedBytes: options.readerMaxQueuedBytes } : {}),
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.snapshotEveryEvents !== undefined ? { snapshotEveryEvents: options.snapshotEveryEvents } : {}),
      ...(options.retentionMs !== undefined ? { retentionMs: options.retentionMs } : {}),
      ...(options.onFatal ? { onFatal: options.onFatal } : {}),
      // Without a logger, failures nobody awaits still surface: the engine's default makes them process warnings.
      ...(options.logger ? loggedFailures(options.logger) : {}),
    });
  } catch (error) {
    await log.close();
    throw error;
  }
  // This host's own: several hosts may run in one process.
  const metrics = new Registry();
  observeHost(metrics, engine);
  const server = await buildServer(engine, {
    token: options.token,
    callbacks,
    limits,
    metrics,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.corsOrigins ? { corsOrigins: options.corsOrigins } : {}),
  });
  let plugin: Plugin | undefined;
  let inspector: Inspection | undefined;
  try {
    plugin = options.backend === undefined ? undefined : await startReasoningChannel(options.backend, options);
    inspector = await startInspection({ ...inspection, epoch: engine.epoch, ...(options.logger ? { logger: options.logger } : {}) });
  } catch (error) {
    await plugin?.stop();
    await engine.close();
    await server.close();
    await log.close();
    throw error;
  }
  if (inspector !== undefined) log.onCommit(() => inspector.committed());
  let closed: Promise<void> | undefined;
  return {
    epoch: engine.epoch,
    server,
    async listen(listen = {}) {
      return server.listen({ host: listen.host ?? '127.0.0.1', port: listen.port ?? 0 });
    },
    endSession: (sessionId) => engine.endSession(sessionId),
    message: (sessionId, text, messageOptions) => engine.message(sessionId, text, messageOptions),
    session: (sessionId) => engine.session(sessionId),
    deliveryStats: () => engine.deliveryStats(),
    sessionIds: () => engine.sessionIds(),
    onEvent: (listener) => engine.subscribeEvents(listener),
    plugin,
    inspectorUrl: inspector?.url,
    close() {
      closed ??= (async () => {
        const stopping = server.close();
        await Promise.all([engine.close(), plugin?.stop()]);
        await stopping;
        await log.close();
        await inspector?.close();
      })();
      return closed;
    },
  };
}

function startReasoningChannel(backend: ReasoningChannelOptions, host: AssistantHostOptions): Promise<Plugin> {
  return startPlugin({
    backendUrl: backend.url,
    integrationId: backend.integration,
    relayToken: backend.relayToken,
    reasoner: backend.reasoner,
    db: backend.db ?? host.db.replace(/(\.db)?$/, '.plugin.db'),
    providerKind: backend.providerKind ?? 'assistant-relay',
    ...(backend.maxConcurrentJobs !== undefined ? { maxConcurrentJobs: backend.maxConcurrentJobs } : {}),
    ...(host.retentionMs !== undefined ? { retentionMs: host.retentionMs } : {}),
    ...(backend.keys !== undefined ? { keys: backend.keys } : {}),
    ...(backend.rotate !== undefined ? { rotate: backend.rotate } : {}),
    ...(host.clock ? { clock: host.clock } : {}),
    // The plugin calls only the level methods, which every pino-compatible logger has.
    ...(host.logger ? { logger: host.logger.child({ component: 'plugin' }) as unknown as NonNullable<PluginOptions['logger']> } : {}),
    ...(host.onFatal ? { onFatal: host.onFatal } : {}),
  });
}

/** Where the engine's unawaited failures and abandoned deliveries go when the embedder gives a logger. */
function loggedFailures(logger: FastifyBaseLogger): Pick<ChatEngineConfig, 'onAgentError' | 'onError' | 'onDeliveryAbandoned'> {
  return {
    onAgentError: (error, turn) => logger.error({ err: error, session_id: turn.session_id, task_id: turn.task_id }, 'agent failed'),
    onError: (error, { what, event, session_id }) => {
      const session = session_id ?? (event !== undefined && 'session_id' in event ? event.session_id : undefined);
      logger.error({ err: error, session_id: session, event: event?.type }, `${what} failed`);
    },
    onDeliveryAbandoned: ({ session_id, n, attempts, reason, outcome }) =>
      logger.warn({ session_id, delivery: n, attempts, reason, outcome }, 'callback delivery abandoned'),
  };
}
