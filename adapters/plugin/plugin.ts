/**
 * The assistant plugin (issue 9, item 3): it heartbeats, subscribes to its integration's job stream, and
 * hands each job frame to its jobs (`jobs.ts`), which run each job once through the reasoner and post its
 * outcome. Its own event log records every job it has seen, started (or been refused), finished and closed,
 * so that after any stop, SIGKILL included, each job stands somewhere exact: a state of the plugin-job
 * statechart (machines/reasoning/plugin-job.ts).
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { pino, type BaseLogger } from 'pino';
import type { Dispatcher } from 'undici';
import { Appender } from '../../engine/core/append.js';
import { systemClock, type Clock } from '../../engine/core/clock.js';
import type { Reasoner } from '../reasoners/reasoner.js';
import { DEFAULT_RETENTION_MS, Retention } from '../../engine/core/retention.js';
import {
  ENVELOPE_VERSION,
  SCHEMA_VERSION,
  type CodedError,
  type Heartbeat,
  type HeartbeatAnswer,
  type Keyring,
  type RekeyAnswer,
  type RekeyRequest,
  type VersionRange,
} from '../../protocol/index.js';
import { EventLog } from '../../storage/event-log.js';
import { packageFile } from '../../protocol/package-files.js';
import { evolvePlugin, initialPluginState, type PluginState } from '../../engine/reasoning/plugin-log.js';
import { pluginStreamOf, type PluginEvent } from '../../machines/reasoning/plugin-job-events.js';
import { pluginJobStage, type PluginJobStage } from '../../machines/reasoning/plugin-job.js';
import { BackendLink } from './backend-link.js';
import { Heartbeats } from './heartbeats.js';
import { Jobs } from './jobs.js';
import { ResultCheckCompiler } from './result-check.js';
import { Rekeys } from './rekeys.js';
import { forgetClosedJobs } from './retention.js';
import { Subscription, type StreamState } from './subscription.js';

const { version } = createRequire(import.meta.url)(fileURLToPath(packageFile('package.json', import.meta.url, 2))) as { version: string };

export interface PluginOptions {
  /** The backend relay's base URL; every request of the plugin goes there and nowhere else. */
  readonly backendUrl: string;
  readonly integrationId: string;
  /** The integration's RELAY_TOKEN (never logged). */
  readonly relayToken: string;
  readonly reasoner: Reasoner;
  /** The plugin's own event log (a SQLite file, private as the host's). */
  readonly db: string;
  /** The provider this plugin speaks for, as the registry names it. */
  readonly providerKind: string;
  /** The versions of jobs it handles; heartbeats advertise them. Default: 1 to 1. */
  readonly schemaVersions?: VersionRange;
  readonly envelopeVersions?: VersionRange;
  /**
   * The pairing's keys, for BYO jobs: a payload opens under the keys its envelope names, and its result is
   * sealed under the same ones. A function is called each time a BYO job is judged, so that a rotation can
   * hand the plugin new keys without a restart; it should not throw. None: the plugin was not paired, and
   * BYO jobs fail `byo_unsupported`.
   */
  readonly keys?: Keyring | (() => Keyring);
  /**
   * Takes a key rotation the client asked for (PROTOCOL.md 7.12): checks it under the keys held
   * (`answerRekey` does), keeps the new keys where `keys` will return them (the previous ones too), and
   * gives the answer; the same request again gets the same answer. Throws `PairingError` to refuse one.
   * None: rotations are ignored (logged).
   */
  readonly rotate?: (request: RekeyRequest) => Promise<RekeyAnswer>;
  /** Jobs run at once; more wait their turn. Default 4. */
  readonly maxConcurrentJobs?: number;
  /** How long `stop()` lets running jobs and pending POSTs finish before it cuts them off. Default 10 s. */
  readonly stopGraceMs?: number;
  /** Jobs closed longer ago than this are forgotten, but for their ids until their deadline (retention.ts). Default 7 days; `Infinity` keeps everything. */
  readonly retentionMs?: number;
  readonly clock?: Clock;
  /** The jitter of every backoff (default `Math.random`). */
  readonly random?: () => number;
  /** undici's dispatcher for every request to the backend. */
  readonly dispatcher?: Dispatcher;
  /** pino-compatible; silent by default. */
  readonly logger?: BaseLogger;
  /** The log could not commit: memory and log have diverged. Default: logged, and the plugin stops. */
  readonly onFatal?: (error: unknown) => void;
}

/** What tests and operators can see of a running plugin. */
export interface PluginStatus {
  readonly stream: StreamState;
  readonly streamsOpened: number;
  readonly nextStreamTryInMs: number | undefined;
  /** Heartbeats done with (answered or failed). */
  readonly heartbeats: number;
  readonly refused: CodedError | undefined;
  readonly running: readonly string[];
  readonly queued: readonly string[];
  readonly jobs: Readonly<Record<string, PluginJobStage>>;
}

const DEFAULT_VERSIONS = (version: number): VersionRange => ({ min: version, max: version });

export class Plugin {
  private readonly logger: BaseLogger;
  private readonly log: EventLog<PluginEvent>;
  private readonly backend: BackendLink;
  private readonly state: PluginState = initialPluginState();
  private readonly jobs: Jobs;
  private readonly subscription: Subscription;
  private readonly heartbeats: Heartbeats;
  /** Key rotations, when the plugin's owner can make new keys (`rotate`). */
  private readonly rekeys: Rekeys | undefined;
  private readonly retention: Retention;
  private readonly versions: { schema_versions: VersionRange; envelope_versions: VersionRange };
  private readonly maxConcurrentJobs: number;
  private refused: CodedError | undefined;
  private stopping = false;
  /**
   * Keeps the process alive from start to stop, as a listening server does: the clock's timers never do,
   * so without it a plugin waiting out a backoff with no socket open (the backend down) would just exit.
   */
  private alive: NodeJS.Timeout | undefined;

  constructor(private readonly options: PluginOptions) {
    const clock = options.clock ?? systemClock;
    const random = options.random ?? Math.random;
    this.logger = options.logger ?? pino({ enabled: false });
    this.maxConcurrentJobs = options.maxConcurrentJobs ?? 4;
    if (!Number.isSafeInteger(this.maxConcurrentJobs) || this.maxConcurrentJobs < 1)
      throw new RangeError('maxConcurrentJobs must be a positive integer');
    this.versions = {
      schema_versions: options.schemaVersions ?? DEFAULT_VERSIONS(SCHEMA_VERSION),
      envelope_versions: options.envelopeVersions ?? DEFAULT_VERSIONS(ENVELOPE_VERSION),
    };
    this.backend = new BackendLink({
      url: options.backendUrl,
      integrationId: options.integrationId,
      relayToken: options.relayToken,
      clock,
      ...(options.dispatcher !== undefined ? { dispatcher: options.dispatcher } : {}),
    });
    try {
      this.log = EventLog.open<PluginEvent>({ path: options.db, streamOf: pluginStreamOf });
    } catch (error) {
      // Refused its log (held by another process, say): nothing is left open behind.
      void this.backend.close();
      throw error;
    }
    for (const { event } of this.log.read()) evolvePlugin(this.state, event);
    const onFatal =
      options.onFatal ??
      ((error: unknown) => {
        this.logger.fatal({ err: error }, "the plugin's event log failed; stopping");
        void this.stop();
      });
    const keys = options.keys;
    const appender = new Appender(this.log, (event) => evolvePlugin(this.state, event), onFatal);
    this.retention = new Retention({
      clock,
      retentionMs: options.retentionMs ?? DEFAULT_RETENTION_MS,
      pass: forgetClosedJobs(this.state, this.log, appender, clock),
      compacted: () => {},
      report: (error) => this.logger.error({ err: error }, 'retention failed'),
    });
    this.jobs = new Jobs({
      state: this.state,
      appender,
      backend: this.backend,
      reasoner: options.reasoner,
      rules: {
        integrationId: options.integrationId,
        schemaVersions: this.versions.schema_versions,
        envelopeVersions: this.versions.envelope_versions,
        checks: new ResultCheckCompiler(),
        ...(keys !== undefined ? { keys: typeof keys === 'function' ? keys : () => keys } : {}),
      },
      clock,
      random,
      logger: this.logger,
      maxConcurrentJobs: this.maxConcurrentJobs,
    });
    this.rekeys =
      options.rotate === undefined
        ? undefined
        : new Rekeys({ backend: this.backend, clock, random, logger: this.logger, rotate: options.rotate });
    this.subscription = new Subscription({
      backend: this.backend,
      clock,
      random,
      logger: this.logger,
      cursor: () => this.state.cursor,
      onJob: (data, id) => this.jobs.onFrame(data, id),
      onRekey: (data) => {
        if (this.rekeys === undefined) this.logger.warn('a key rotation for a plugin that holds no keys to rotate: ignored');
        else this.rekeys.onFrame(data);
      },
    });
    this.heartbeats = new Heartbeats({
      backend: this.backend,
      clock,
      logger: this.logger,
      body: () => this.heartbeat(),
      onAnswer: (answer) => this.onHeartbeatAnswer(answer),
    });
  }

  /** Takes up what the log left open, sends the first heartbeat, then subscribes (unless that heartbeat was refused). */
  async start(): Promise<void> {
    this.alive = setInterval(() => {}, 2 ** 31 - 1);
    try {
      this.jobs.recover();
      await this.heartbeats.start();
    } catch (error) {
      clearInterval(this.alive);
      throw error;
    }
    this.retention.start();
    if (this.refused === undefined && !this.stopping) this.subscription.resume();
  }

  /**
   * Stops taking jobs, lets running jobs and pending POSTs go on for `stopGraceMs`, then cuts them off
   * (each is taken up again by the next start), says it stops (a last heartbeat), and closes the log.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    try {
      await Promise.all([this.subscription.stop(), this.heartbeats.stop(), this.rekeys?.stop()]);
      await this.jobs.stop(this.options.stopGraceMs ?? 10_000);
      // Once the jobs have said what they could: the integration is offline from now.
      await this.heartbeats.farewell();
      await this.retention.stop();
      await this.log.close();
      await this.backend.close();
    } finally {
      clearInterval(this.alive);
    }
  }

  status(): PluginStatus {
    return {
      stream: this.subscription.state,
      streamsOpened: this.subscription.opened,
      nextStreamTryInMs: this.subscription.nextTryInMs,
      heartbeats: this.heartbeats.done,
      refused: this.refused,
      running: [...this.jobs.running],
      queued: this.jobs.queue.map((q) => q.job_id),
      jobs: Object.fromEntries([...this.state.jobs].map(([id, job]) => [id, pluginJobStage(job)])),
    };
  }

  private heartbeat(): Heartbeat {
    return {
      plugin: { name: 'assistant-relay', version },
      provider_kind: this.options.providerKind,
      ...this.versions,
      status: this.refused !== undefined ? 'degraded' : this.jobs.running.size >= this.maxConcurrentJobs ? 'busy' : 'ready',
      running_job_ids: this.jobs.started(),
      reasoner: {
        name: this.options.reasoner.name,
        ...(this.options.reasoner.model !== undefined ? { model: this.options.reasoner.model } : {}),
      },
    };
  }

  private onHeartbeatAnswer(answer: HeartbeatAnswer): void {
    if (answer.refused !== undefined) {
      if (this.refused === undefined)
        this.logger.error({ refused: answer.refused }, 'the backend refused this plugin: it takes no jobs until a heartbeat is accepted');
      this.refused = answer.refused;
      this.subscription.pause();
      return;
    }
    if (this.refused !== undefined) this.logger.info('the backend accepts this plugin again');
    this.refused = undefined;
    if (!this.stopping) this.subscription.resume();
  }
}

/** Opens the plugin's log, takes up what it left open, and starts. */
export async function startPlugin(options: PluginOptions): Promise<Plugin> {
  const plugin = new Plugin(options);
  await plugin.start();
  return plugin;
}
