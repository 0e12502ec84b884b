/** The engine's configuration: what an embedder may set, and the defaults, which are the spec's numbers. */
import { LIMITS } from '../../protocol/index.js';
import type { DeliveryAbandoned, Form } from '../../machines/chat/events.js';
import type { SessionLimits } from '../../machines/chat/task-session.js';
import type { Agent, Turn } from './agent.js';
import type { CallbackTransport } from './callback.js';
import { randomIds, systemClock, type Clock, type IdSource } from '../core/clock.js';
import { DEFAULT_RETENTION_MS } from '../core/retention.js';
import { SNAPSHOT_EVERY_EVENTS } from '../core/snapshots.js';
import type { FailureContext } from '../core/failures.js';

export interface ChatEngineConfig {
  readonly agent: Agent;
  /** Where callback deliveries go out (Form B, and Form A tasks with a callback block). */
  readonly transport: CallbackTransport;
  /** The form new sessions take (1.6). Default A. */
  readonly form?: Form;
  readonly clock?: Clock;
  readonly ids?: IdSource;
  /** A session with no logged activity for this long ends (reason `idle`). Default 24 h. */
  readonly sessionIdleTtlMs?: number;
  readonly keepaliveMs?: number;
  readonly maxReadersPerSession?: number;
  readonly readerMaxQueuedBytes?: number;
  /** Retention, memory and duplicate-check bounds; defaults are the spec's minimums. */
  readonly limits?: Partial<SessionLimits>;
  /** Committed events between two snapshots of the fold (engine/snapshots.ts). Default 50,000. */
  readonly snapshotEveryEvents?: number;
  /** Sessions ended longer ago than this are forgotten and their events removed (engine/retention.ts). Default 7 days; `Infinity` keeps everything. */
  readonly retentionMs?: number;
  /** Called when the log cannot be written: memory and log have diverged, so the process must restart. */
  readonly onFatal?: (error: unknown) => void;
  readonly onAgentError?: (error: unknown, turn: Turn) => void;
  /**
   * Something failed that nobody awaits: an after-commit action (with the event it acted on), an `onEvent`
   * listener, a background command. The engine goes on; this is where such failures are reported.
   */
  readonly onError?: (error: unknown, context: FailureContext) => void;
  /** A callback delivery was given up (it is also an event, and counted in `deliveryStats`). */
  readonly onDeliveryAbandoned?: (event: DeliveryAbandoned) => void;
}

export const DEFAULT_SESSION_IDLE_TTL_MS = 24 * 60 * 60 * 1000;

export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  maxReplies: LIMITS.backlogMinReplies,
  maxBytes: LIMITS.backlogMinBytes,
  ledgerMaxTasks: LIMITS.ledgerMaxTasks,
  maxSpans: 64,
  memoryMaxEntries: 200,
  memoryMaxChars: 1024 * 1024,
  taskIdWindow: LIMITS.taskIdWindow,
};

/** The configuration with every default filled in. */
export interface Settings {
  readonly agent: Agent;
  readonly transport: CallbackTransport;
  readonly form: Form;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly idleTtlMs: number;
  readonly keepaliveMs: number;
  readonly maxReaders: number;
  readonly readerMaxQueuedBytes: number;
  readonly limits: SessionLimits;
  readonly snapshotEveryEvents: number;
  readonly retentionMs: number;
  readonly onFatal: (error: unknown) => void;
  readonly onAgentError: (error: unknown, turn: Turn) => void;
  readonly onError: (error: unknown, context: FailureContext) => void;
  readonly onDeliveryAbandoned: (event: DeliveryAbandoned) => void;
}

export function settingsOf(config: ChatEngineConfig): Settings {
  return {
    agent: config.agent,
    transport: config.transport,
    form: config.form ?? 'A',
    clock: config.clock ?? systemClock,
    ids: config.ids ?? randomIds,
    idleTtlMs: config.sessionIdleTtlMs ?? DEFAULT_SESSION_IDLE_TTL_MS,
    keepaliveMs: config.keepaliveMs ?? LIMITS.keepaliveMs,
    maxReaders: config.maxReadersPerSession ?? LIMITS.maxReadersPerSession,
    readerMaxQueuedBytes: config.readerMaxQueuedBytes ?? LIMITS.readerMaxQueuedBytes,
    limits: { ...DEFAULT_SESSION_LIMITS, ...config.limits },
    snapshotEveryEvents: config.snapshotEveryEvents ?? SNAPSHOT_EVERY_EVENTS,
    retentionMs: config.retentionMs ?? DEFAULT_RETENTION_MS,
    onFatal: config.onFatal ?? crash,
    onAgentError: config.onAgentError ?? (() => {}),
    // Unreported failures are bugs: without a handler they surface as the process's own warning.
    onError: config.onError ?? ((error, context) => process.emitWarning(`assistant-relay: ${context.what} failed: ${String(error)}`)),
    onDeliveryAbandoned: config.onDeliveryAbandoned ?? (() => {}),
  };
}

function crash(error: unknown): void {
  process.nextTick(() => {
    throw error;
  });
}
