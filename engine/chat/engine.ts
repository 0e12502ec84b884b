/**
 * The engine: folds the event log into the chat projection, turns commands into events through the
 * deciders, appends them, and only once they are committed acts on them (after-commit handlers: agent
 * runs, stream readers, the callback outbox pump, idle deadlines, the embedder's listeners). On start it
 * folds the whole log, so a restart rebuilds every session, task and backlog exactly, then recovers what
 * the crash left in flight.
 */
import type { EventId, IncomingEvent, ReplyBody } from '../../protocol/index.js';
import type { Outcome, SessionCommand } from '../../machines/chat/commands.js';
import type { DomainEvent, EndReason, Form } from '../../machines/chat/events.js';
import type { EventLog } from '../../storage/event-log.js';
import { AfterCommit } from '../core/after-commit.js';
import { AgentRuns } from './agent-runs.js';
import { Appender } from '../core/append.js';
import type { CommandPort } from './command-port.js';
import { settingsOf, type ChatEngineConfig, type Settings } from './config.js';
import { HostClosingError, inBackground } from '../core/failures.js';
import { IdleDeadlines } from './idle.js';
import { OutboxPump } from './outbox-pump.js';
import { chatSnapshotCodec } from './chat-snapshot.js';
import { chatGauges, type ChatGauges } from './gauges.js';
import { ChatProjection, replayableSession, type ChatState } from './projection.js';
import { Readers, type SubscribeResult } from './readers.js';
import { recover } from './recovery.js';
import { Retention } from '../core/retention.js';
import { forgetEndedSessions } from './retention.js';
import { SnapshotWriter, restoreSnapshot, type SnapshotCodec } from '../core/snapshots.js';
import type { SubscriberTransport } from '../core/subscription-actor.js';
import type { DeliveryStats, SessionView } from './view.js';

export type { ChatEngineConfig } from './config.js';
export type { SubscribeResult } from './readers.js';
export type { ChatGauges } from './gauges.js';
export { HostClosingError } from '../core/failures.js';

export type IncomingResult = 'accepted' | 'duplicate' | 'session_ended' | 'callback_required';

export class ChatEngine implements CommandPort {
  readonly epoch: string;
  readonly form: Form;
  private closed = false;
  private readonly settings: Settings;
  private readonly projection: ChatProjection;
  private readonly appender: Appender<DomainEvent>;
  private readonly afterCommit: AfterCommit<DomainEvent>;
  private readonly readers: Readers;
  private readonly runs: AgentRuns;
  private readonly outboxes: OutboxPump;
  private readonly idle: IdleDeadlines;
  private readonly snapshots: SnapshotWriter<DomainEvent, ChatState>;
  private readonly snapshotCodec: SnapshotCodec<ChatState>;
  private readonly retention: Retention;

  private constructor(log: EventLog<DomainEvent>, config: ChatEngineConfig) {
    const settings = (this.settings = settingsOf(config));
    this.epoch = settings.ids.token();
    this.form = settings.form;
    this.projection = new ChatProjection(settings.limits);
    this.snapshotCodec = chatSnapshotCodec(this.projection, settings.limits);
    // Before the after-commit handlers subscribe: a snapshot is taken before any of them appends.
    this.snapshots = new SnapshotWriter(log, this.snapshotCodec, {
      clock: settings.clock,
      everyEvents: settings.snapshotEveryEvents,
      failed: (error) => this.report(error, { what: 'writing a snapshot' }),
    });
    this.appender = new Appender(log, (event) => this.projection.apply(event), settings.onFatal);
    this.retention = new Retention({
      clock: settings.clock,
      retentionMs: settings.retentionMs,
      pass: forgetEndedSessions(this.projection, log, (events) => this.appender.append(events), settings.clock),
      compacted: () => this.snapshots.soon(),
      report: (error) => this.report(error, { what: 'retention' }),
    });
    this.afterCommit = new AfterCommit((error, handler, event) => this.report(error, { what: handler, ...(event ? { event } : {}) }));
    this.runs = new AgentRuns(this.projection, this, settings);
    this.readers = new Readers(this.projection, settings, (sessionId) =>
      replayableSession(settings.limits, this.appender.history(sessionId)),
    );
    this.outboxes = new OutboxPump(this.projection, this, settings.clock, settings.transport, settings.onDeliveryAbandoned);
    this.idle = new IdleDeadlines(this.projection, settings.clock, settings.idleTtlMs, (session_id) => {
      const command = { type: 'expire', session_id, idleTtlMs: settings.idleTtlMs, epoch: this.epoch, at: settings.clock.now() } as const;
      inBackground(this.run(command), this.report, { what: 'idle expiry', session_id });
    });
    for (const handler of [this.runs, this.readers, this.outboxes, this.idle]) this.afterCommit.add(handler);
  }

  /** Folds the log (from its newest good snapshot on), starts a new epoch, and recovers what a crash left in flight. */
  static async start(log: EventLog<DomainEvent>, config: ChatEngineConfig): Promise<ChatEngine> {
    const engine = new ChatEngine(log, config);
    const restored = restoreSnapshot(log, engine.snapshotCodec, engine.report);
    if (restored !== undefined) engine.projection.restore(restored.state);
    for (const { event } of log.read(restored?.position)) engine.projection.apply(event);
    log.onCommit((events) => engine.afterCommit.dispatch(events));
    const { clock } = engine.settings;
    await engine.append([
      { type: 'host.started', epoch: engine.epoch, form: engine.form, limits: engine.settings.limits, at: clock.now() },
    ]);
    await recover({ projection: engine.projection, commands: engine, clock, idle: engine.idle, outboxes: engine.outboxes });
    engine.retention.start();
    return engine;
  }

  // ---- commands --------------------------------------------------------------------------------

  /** `POST /v1/incoming`: resolves once the task is durably logged (the agent then runs in the background). */
  async incoming(event: IncomingEvent): Promise<IncomingResult> {
    // A generation is drawn only for a session that does not exist yet.
    const generation = this.projection.formOf(event.session_id) === undefined ? { generation: this.settings.ids.token() } : {};
    const outcome = await this.run({ type: 'incoming', event, ...generation, at: this.settings.clock.now() });
    return outcome === 'accepted' || outcome === 'duplicate' || outcome === 'callback_required' ? outcome : 'session_ended';
  }

  /** The form of a session: the one it was opened in, or, for a session not yet seen, the host's. */
  formOf(sessionId: string): Form {
    return this.projection.formOf(sessionId) ?? this.form;
  }

  /**
   * A message the agent adds on its own (Form B): posted to the session's callback at
   * `/tasks/{a fresh UUID}`. `dropped` for a Form A session (replies there belong to tasks) or an ended one.
   */
  async message(sessionId: string, text: string, options: { readonly message_id?: string } = {}): Promise<Outcome> {
    if (this.projection.formOf(sessionId) !== 'B') return 'dropped';
    const { ids } = this.settings;
    const task_id = ids.uuid();
    const reply: ReplyBody = {
      session_id: sessionId,
      task_id,
      status: 'message',
      message_id: options.message_id ?? ids.uuid(),
      reply_text: text,
    };
    return this.runs.reply(sessionId, task_id, reply);
  }

  /** Ends a session (embedding API): pending tasks settle `session_ended`; streams close after what was sent. */
  async endSession(sessionId: string, reason: EndReason = 'host'): Promise<boolean> {
    const outcome = await this.run({ type: 'end', session_id: sessionId, reason, epoch: this.epoch, at: this.settings.clock.now() });
    return outcome === 'ended';
  }

  /** Decides a session command, appends its events, and resolves with the outcome once they are committed. */
  async run(command: SessionCommand): Promise<Outcome> {
    if (this.closing) throw new HostClosingError();
    const decision = this.projection.decide(command, this.form);
    await this.appender.commit(decision.events);
    return decision.outcome;
  }

  get closing(): boolean {
    return this.closed;
  }

  append(events: readonly DomainEvent[]): Promise<void> {
    return this.appender.append(events);
  }

  readonly report = (error: unknown, context: Parameters<Settings['onError']>[1]): void => this.settings.onError(error, context);

  // ---- reads -----------------------------------------------------------------------------------

  /** The session as folded in memory, which may run a batch ahead of the log. */
  session(sessionId: string): SessionView | undefined {
    return this.projection.view(sessionId, this.readers.views(sessionId));
  }

  /** The session as the log holds it: waits for what is appended to be committed. */
  async committedSession(sessionId: string): Promise<SessionView | undefined> {
    await this.appender.settled();
    return this.session(sessionId);
  }

  /** Callback deliveries of every session: queued now, and how many succeeded or were abandoned. */
  deliveryStats(): DeliveryStats {
    return this.projection.deliveryStats();
  }

  sessionIds(): string[] {
    return this.projection.sessionIds();
  }

  /** Sessions open, tasks pending, readers and deliveries queued now: what an operator's scrape reads. */
  gauges(): ChatGauges {
    return chatGauges(this.projection.state(), this.readers.count);
  }

  /** Every committed event, as it commits. Returns an unsubscribe function. */
  subscribeEvents(listener: (event: DomainEvent) => void): () => void {
    return this.afterCommit.add({ name: 'onEvent listener', event: listener });
  }

  /**
   * Opens a stream reader: replay after the cursor, then the reconciliation frame, then live frames. The
   * replay is taken from committed state in the same step that registers the reader, so every reply
   * reaches it exactly once. `connect` is called only once the reader is accepted, to start the response.
   */
  subscribe(sessionId: string, cursor: EventId | undefined, connect: () => SubscriberTransport): SubscribeResult {
    if (this.formOf(sessionId) === 'B') return { kind: 'no_stream' };
    return this.readers.subscribe(sessionId, cursor, this.appender.uncommitted, this.closing, connect);
  }

  /** Stops timers, closes every stream, aborts agent runs, and waits for the log to be committed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.idle.stop();
    this.outboxes.stop();
    this.readers.closeAll();
    this.runs.abortAll();
    await this.retention.stop();
    await this.appender.settled();
    await this.snapshots.close();
  }
}
