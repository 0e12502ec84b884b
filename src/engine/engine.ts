/**
 * The engine: folds the event log into sessions, turns commands into events through the session decider,
 * appends them, and only once they are committed acts on them: answers the client, starts the agent,
 * pushes frames to subscribers, closes streams. On start it folds the whole log, so a restart rebuilds
 * every session, task and backlog exactly; tasks that a crash left pending are settled `interrupted`.
 */
import { setMaxListeners } from 'node:events';
import {
  INSIGHTS_PREFIX,
  LIMITS,
  ReplyBody,
  formatEventId,
  progressFrame,
  replyBytes,
  resyncFrame,
  terminalFrame,
  type EventId,
  type IncomingEvent,
  type ResyncFrame,
} from '../protocol/index.js';
import { commandSession, decide, type Decision, type Outcome, type SessionCommand } from '../machines/decide.js';
import { decideConversation } from '../machines/conversation-decide.js';
import {
  evolveConversation,
  isConversationEnded,
  openConversation,
  type ConversationSnapshot,
} from '../machines/conversation.js';
import { decideDelivery, type DeliveryCommand } from '../machines/delivery.js';
import type { ConversationEvent, DeliveryEvent, DomainEvent, EndReason, Form, SessionEvent } from '../machines/events.js';
import { resume } from '../machines/backlog.js';
import { memoryBefore, type MemoryEntry } from '../machines/memory.js';
import { EMPTY_OUTBOX, enqueue, evolveOutbox, head, type Outbox } from '../machines/outbox.js';
import { evolveSession, isEnded, openSession, type SessionLimits, type SessionSnapshot } from '../machines/session.js';
import type { Frame } from '../machines/subscription.js';
import type { Window } from '../machines/window.js';
import type { EventLog } from '../storage/event-log.js';
import type { Agent, ReplySink, Turn } from './agent.js';
import type { CallbackOutcome, CallbackTransport } from './callback.js';
import { randomIds, systemClock, type Clock, type IdSource } from './clock.js';
import { DeliveryEffects } from './deliveries.js';
import { IdleDeadlines } from './idle.js';
import { SubscriptionActor, type SubscriberTransport } from './subscription-actor.js';
import { conversationView, sessionView, type DeliveryStats, type SessionView } from './view.js';


export interface EngineConfig {
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
  /** Retention and memory bounds; defaults are the spec's minimums. */
  readonly limits?: Partial<SessionLimits>;
  /** Called when the log cannot be written: memory and log have diverged, so the process must restart. */
  readonly onFatal?: (error: unknown) => void;
  readonly onAgentError?: (error: unknown, turn: Turn) => void;
  /** A listener given to `subscribeEvents` threw. */
  readonly onListenerError?: (error: unknown) => void;
  /** A callback delivery was given up (it is also an event, and counted in `deliveryStats`). */
  readonly onDeliveryAbandoned?: (event: Extract<DomainEvent, { type: 'delivery.abandoned' }>) => void;
}

export type IncomingResult = 'accepted' | 'duplicate' | 'session_ended' | 'callback_required';

export type SubscribeResult =
  | { readonly kind: 'subscribed'; readonly actor: SubscriptionActor }
  | { readonly kind: 'too_many_readers' }
  /** The session ended and there is nothing after the cursor: the client should stop reconnecting. */
  | { readonly kind: 'ended' }
  /** A Form B conversation (or, on a Form B host, a session not yet seen): its replies go to its callback. */
  | { readonly kind: 'no_stream' };

/** Thrown by commands once `close()` has begun: nothing new enters the log of a closing host. */
export class HostClosingError extends Error {
  override readonly name = 'HostClosingError';
  constructor() {
    super('the host is closing');
  }
}

export const DEFAULT_SESSION_IDLE_TTL_MS = 24 * 60 * 60 * 1000;

const DEFAULT_LIMITS: SessionLimits = {
  maxReplies: LIMITS.backlogMinReplies,
  maxBytes: LIMITS.backlogMinBytes,
  ledgerMaxTasks: LIMITS.ledgerMaxTasks,
  maxSpans: 64,
  memoryMaxEntries: 200,
  memoryMaxChars: 1024 * 1024,
};

/** The log's stream of an event: its session, or '' for host-wide events. */
export function streamOf(event: DomainEvent): string {
  return event.type === 'host.started' ? '' : event.session_id;
}

/**
 * Whether someone waits on the event's commit (a 202, a terminal frame, an agent's send). Progress is
 * live-only and nobody awaits it: it can wait for its batch, and usually shares the answer's.
 */
export function isUrgent(event: DomainEvent): boolean {
  return event.type !== 'task.progressed';
}

export class Engine {
  readonly epoch: string;
  readonly form: Form;
  /** Form A sessions. */
  private readonly sessions = new Map<string, SessionSnapshot>();
  /** Form B conversations. A session_id is in one of the two maps, never both. */
  private readonly conversations = new Map<string, ConversationSnapshot>();
  /** Callback deliveries per session, for both forms. */
  private readonly outboxes = new Map<string, Outbox>();
  private readonly deliveries: DeliveryEffects;
  /** Every task_id each session ever started: the idempotency index for retried POSTs. */
  private readonly taskIds = new Map<string, Set<string>>();
  private readonly readers = new Map<string, Set<SubscriptionActor>>();
  /** One abort signal per session with agent runs: aborted when the session ends or the host closes. */
  private readonly runs = new Map<string, AbortController>();
  private readonly listeners = new Set<(event: DomainEvent) => void>();
  private readonly idle: IdleDeadlines;
  private readonly clock: Clock;
  private readonly ids: IdSource;
  private readonly limits: SessionLimits;
  private readonly idleTtlMs: number;
  private readonly keepaliveMs: number;
  private readonly maxReaders: number;
  private readonly readerMaxQueuedBytes: number;
  private closing = false;

  private constructor(
    private readonly log: EventLog<DomainEvent>,
    private readonly config: EngineConfig,
  ) {
    this.clock = config.clock ?? systemClock;
    this.ids = config.ids ?? randomIds;
    this.limits = { ...DEFAULT_LIMITS, ...config.limits };
    this.idleTtlMs = config.sessionIdleTtlMs ?? DEFAULT_SESSION_IDLE_TTL_MS;
    this.keepaliveMs = config.keepaliveMs ?? LIMITS.keepaliveMs;
    this.maxReaders = config.maxReadersPerSession ?? LIMITS.maxReadersPerSession;
    this.readerMaxQueuedBytes = config.readerMaxQueuedBytes ?? LIMITS.readerMaxQueuedBytes;
    this.epoch = this.ids.token();
    this.form = config.form ?? 'A';
    this.deliveries = new DeliveryEffects(config.transport, this.clock, {
      due: (sessionId) => this.pump(sessionId),
      answered: (sessionId, n, outcome) => this.answered(sessionId, n, outcome),
    });
    this.idle = new IdleDeadlines(this.clock, (sessionId) => {
      // A failed append has already gone to onFatal; closing refuses the command: nothing more to do here.
      this.run({ type: 'expire', session_id: sessionId, idleTtlMs: this.idleTtlMs, epoch: this.epoch, at: this.clock.now() }).catch(() => {});
    });
  }

  /**
   * Folds the log, starts a new epoch, settles what a crash left pending, makes again the callback
   * attempts it cut off, and rearms idle deadlines and retry timers.
   */
  static async start(log: EventLog<DomainEvent>, config: EngineConfig): Promise<Engine> {
    const engine = new Engine(log, config);
    for (const { event } of log.read()) engine.fold(event);
    log.onCommit((events) => engine.act(events));
    await engine.append([{ type: 'host.started', epoch: engine.epoch, form: engine.form, at: engine.clock.now() }]);
    const now = () => engine.clock.now();
    for (const [session_id, session] of engine.sessions) {
      if (isEnded(session)) continue;
      if (session.context.pending.size > 0) await engine.run({ type: 'interrupt', session_id, epoch: engine.epoch, at: now() });
      engine.idle.touch(session_id, engine.sessions.get(session_id)!.context.lastActivityAt + engine.idleTtlMs);
    }
    for (const [session_id, conversation] of engine.conversations) {
      if (isConversationEnded(conversation)) continue;
      if (conversation.context.running.size > 0) await engine.run({ type: 'interrupt', session_id, epoch: engine.epoch, at: now() });
      engine.idle.touch(session_id, engine.conversations.get(session_id)!.context.lastActivityAt + engine.idleTtlMs);
    }
    for (const session_id of engine.outboxes.keys()) {
      await engine.deliveryCommand(session_id, { type: 'interrupt', at: now() });
      engine.pump(session_id);
    }
    return engine;
  }

  // ---- commands --------------------------------------------------------------------------------

  /** `POST /v1/incoming`: resolves once the task is durably logged (the agent then runs in the background). */
  async incoming(event: IncomingEvent): Promise<IncomingResult> {
    // A generation is drawn only for a session that does not exist yet.
    const generation = this.knows(event.session_id) ? {} : { generation: this.ids.token() };
    const outcome = await this.run({ type: 'incoming', event, ...generation, at: this.clock.now() });
    return outcome === 'accepted' || outcome === 'duplicate' || outcome === 'callback_required' ? outcome : 'session_ended';
  }

  /** The form of a session: the one it was opened in, or, for a session not yet seen, the host's. */
  formOf(sessionId: string): Form {
    if (this.sessions.has(sessionId)) return 'A';
    return this.conversations.has(sessionId) ? 'B' : this.form;
  }

  /**
   * A message the agent adds on its own (Form B): posted to the session's callback at
   * `/tasks/{a fresh UUID}`. `dropped` for a Form A session (replies there belong to tasks) or an ended one.
   */
  async message(sessionId: string, text: string, options: { readonly message_id?: string } = {}): Promise<Outcome> {
    if (!this.conversations.has(sessionId)) return 'dropped';
    const task_id = this.ids.uuid();
    const reply: ReplyBody = { session_id: sessionId, task_id, status: 'message', message_id: options.message_id ?? this.ids.uuid(), reply_text: text };
    return this.reply(sessionId, task_id, reply);
  }

  /** Ends a session (embedding API): pending tasks settle `session_ended`; streams close after what was sent. */
  async endSession(sessionId: string, reason: EndReason = 'host'): Promise<boolean> {
    const outcome = await this.run({ type: 'end', session_id: sessionId, reason, epoch: this.epoch, at: this.clock.now() });
    return outcome === 'ended';
  }

  /** A reply from the agent for a task; resolves with what became of it once logged. */
  async reply(sessionId: string, taskId: string, reply: ReplyBody): Promise<Outcome> {
    return this.run({ type: 'reply', session_id: sessionId, task_id: taskId, reply, epoch: this.epoch, at: this.clock.now() });
  }

  // ---- reads -----------------------------------------------------------------------------------

  /** The session as folded in memory, which may run a batch ahead of the log. */
  session(sessionId: string): SessionView | undefined {
    const outbox = this.outboxes.get(sessionId) ?? EMPTY_OUTBOX;
    const session = this.sessions.get(sessionId);
    if (session !== undefined) return sessionView(session, this.readers.get(sessionId)?.size ?? 0, outbox);
    const conversation = this.conversations.get(sessionId);
    return conversation === undefined ? undefined : conversationView(conversation, outbox);
  }

  /** Callback deliveries of every session: queued now, and how many succeeded or were abandoned. */
  deliveryStats(): DeliveryStats {
    const stats = { queued: 0, succeeded: 0, abandoned: 0 };
    for (const outbox of this.outboxes.values()) {
      stats.queued += outbox.queue.size;
      stats.succeeded += outbox.succeeded;
      stats.abandoned += outbox.abandoned;
    }
    return stats;
  }

  /** The session as the log holds it: waits for what is appended to be committed. */
  async committedSession(sessionId: string): Promise<SessionView | undefined> {
    await this.log.settled();
    return this.session(sessionId);
  }

  sessionIds(): string[] {
    return [...this.sessions.keys(), ...this.conversations.keys()];
  }

  /** Every committed event, as it commits. Returns an unsubscribe function. */
  subscribeEvents(listener: (event: DomainEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Opens a stream reader: replay after the cursor, then the reconciliation frame, then live frames.
   * Waits until every appended event is committed, so the replay never shows what the log lacks;
   * `connect` is called only once the reader is accepted, to start the response.
   */
  async subscribe(
    sessionId: string,
    cursor: EventId | undefined,
    connect: () => SubscriberTransport,
  ): Promise<SubscribeResult> {
    await this.log.settled();
    if (this.formOf(sessionId) === 'B') return { kind: 'no_stream' };
    const readers = this.readers.get(sessionId) ?? new Set<SubscriptionActor>();
    if (readers.size >= this.maxReaders) return { kind: 'too_many_readers' };
    const session = this.sessions.get(sessionId);
    const plan = resume(session?.context.backlog, cursor);
    const ended = this.closing || (session !== undefined && isEnded(session));
    if (ended && plan.replay.length === 0 && (plan.resync === undefined || plan.resync.missed_task_ids.length === 0)) {
      return { kind: 'ended' };
    }
    let replay = '';
    for (const r of plan.replay) replay += terminalFrame(r.id, r.data);
    if (plan.resync !== undefined) {
      const frame: ResyncFrame = { type: 'resync', session_id: sessionId, ...plan.resync, missed_task_ids: [...plan.resync.missed_task_ids] };
      replay += resyncFrame(JSON.stringify(frame));
    }
    const actor = new SubscriptionActor(
      connect(),
      this.clock,
      { keepaliveMs: this.keepaliveMs, maxQueuedBytes: this.readerMaxQueuedBytes },
      (closed) => {
        readers.delete(closed);
        if (readers.size === 0 && this.readers.get(sessionId) === readers) this.readers.delete(sessionId);
      },
    );
    readers.add(actor);
    this.readers.set(sessionId, readers);
    actor.open(replay);
    if (ended) actor.close(this.closing ? 'host_closing' : 'session_ended');
    return { kind: 'subscribed', actor };
  }

  /** Stops timers, closes every stream, aborts agent runs, and waits for the log to be committed. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.idle.stop();
    this.deliveries.stop();
    for (const readers of this.readers.values()) for (const actor of [...readers]) actor.close('host_closing');
    for (const controller of this.runs.values()) controller.abort();
    await this.log.settled();
  }

  // ---- the decide / evolve / act loop ----------------------------------------------------------

  private async run(command: SessionCommand): Promise<Outcome> {
    if (this.closing) throw new HostClosingError();
    const decision = this.decide(command);
    if (decision.events.length > 0) await this.append(decision.events);
    // An answer that needs no new event (a duplicate, say) may rest on events still in the batch:
    // acknowledge only what the log holds.
    else if (this.log.pending > 0) await this.log.settled();
    return decision.outcome;
  }

  /** Each session is decided by its form's decider; a new one takes the host's form. */
  private decide(command: SessionCommand): Decision<SessionEvent | ConversationEvent> {
    const sessionId = commandSession(command);
    const ctx = { taskKnown: (taskId: string) => this.taskIds.get(sessionId)?.has(taskId) ?? false };
    return this.formOf(sessionId) === 'A'
      ? decide(command, this.sessions.get(sessionId), ctx)
      : decideConversation(command, this.conversations.get(sessionId), ctx);
  }

  private knows(sessionId: string): boolean {
    return this.sessions.has(sessionId) || this.conversations.has(sessionId);
  }

  /** Folds events into memory now (so the next decision sees them) and into the log's current batch. */
  private async append(events: readonly DomainEvent[]): Promise<void> {
    let committed: Promise<void> = Promise.resolve();
    for (const event of events) {
      this.fold(event);
      committed = this.log.append(event);
    }
    try {
      await committed;
    } catch (error) {
      (this.config.onFatal ?? crash)(error);
      throw error;
    }
  }

  /** evolve: the pure fold of one event. */
  private fold(event: DomainEvent): void {
    switch (event.type) {
      case 'host.started':
        return;
      case 'session.opened':
        if (event.form === 'A') this.sessions.set(event.session_id, openSession(event, this.limits));
        else this.conversations.set(event.session_id, openConversation(event, this.limits));
        this.taskIds.set(event.session_id, new Set());
        return;
      case 'delivery.attempted':
      case 'delivery.failed':
      case 'delivery.succeeded':
      case 'delivery.abandoned':
      case 'delivery.interrupted':
        this.outboxes.set(event.session_id, evolveOutbox(this.outboxOf(event), event));
        return;
      case 'task.started':
      case 'task.progressed':
      case 'task.settled':
        this.sessions.set(event.session_id, evolveSession(this.sessionOf(event), event));
        break;
      case 'message.received':
      case 'reply.queued':
      case 'turn.finished':
        this.conversations.set(event.session_id, evolveConversation(this.conversationOf(event), event));
        break;
      case 'reply.dropped':
      case 'session.ended':
        if (this.sessions.has(event.session_id)) this.sessions.set(event.session_id, evolveSession(this.sessionOf(event), event));
        else this.conversations.set(event.session_id, evolveConversation(this.conversationOf(event), event));
        return;
    }
    if (event.type === 'task.started' || event.type === 'message.received') this.taskIds.get(event.session_id)!.add(event.task_id);
    if ('delivery' in event && event.delivery !== undefined) {
      this.outboxes.set(event.session_id, enqueue(this.outboxOf(event), event.session_id, event.delivery, event.reply, event.at));
    }
  }

  private sessionOf(event: { readonly type: string; readonly session_id: string }): SessionSnapshot {
    const session = this.sessions.get(event.session_id);
    if (session === undefined) throw new Error(`event log: ${event.type} for ${event.session_id}, not an open Form A session`);
    return session;
  }

  private conversationOf(event: { readonly type: string; readonly session_id: string }): ConversationSnapshot {
    const conversation = this.conversations.get(event.session_id);
    if (conversation === undefined) throw new Error(`event log: ${event.type} for ${event.session_id}, not an open Form B conversation`);
    return conversation;
  }

  private outboxOf(event: { readonly session_id: string }): Outbox {
    return this.outboxes.get(event.session_id) ?? EMPTY_OUTBOX;
  }

  /** Effects of a committed batch. Each reader gets the batch's frames for its session in one delivery. */
  private act(events: readonly DomainEvent[]): void {
    const frames = new Map<string, Frame[]>();
    for (const event of events) {
      if (event.type !== 'host.started') this.effect(event, frames);
      for (const listener of this.listeners) {
        // A listener is the host's code: its failure must not stop our effects or other listeners.
        try {
          listener(event);
        } catch (error) {
          this.config.onListenerError?.(error);
        }
      }
    }
    for (const [sessionId, batch] of frames) this.deliver(sessionId, batch);
  }

  private effect(event: Exclude<DomainEvent, { type: 'host.started' }>, frames: Map<string, Frame[]>): void {
    const { session_id } = event;
    switch (event.type) {
      case 'session.opened':
      case 'reply.dropped':
      case 'turn.finished':
        break;
      case 'task.started':
      case 'message.received':
        this.startAgent(event.session_id, event.task_id, event.text);
        break;
      case 'task.progressed': {
        if (event.delivery !== undefined) {
          this.pump(session_id);
          break;
        }
        const data = JSON.stringify(event.reply);
        this.queueFrame(frames, session_id, { kind: 'progress', task_id: event.task_id, text: progressFrame(data), bytes: replyBytes(data) });
        break;
      }
      case 'task.settled': {
        if (event.delivery !== undefined) {
          this.pump(session_id);
          break;
        }
        const generation = this.sessions.get(session_id)!.context.backlog.generation;
        const id = formatEventId({ epoch: event.epoch, generation, seq: event.seq });
        this.queueFrame(frames, session_id, { kind: 'terminal', task_id: event.task_id, text: terminalFrame(id, event.data), bytes: replyBytes(event.data) });
        break;
      }
      case 'reply.queued':
        this.pump(session_id);
        break;
      case 'delivery.attempted': {
        const attempt = this.outboxes.get(session_id)?.queue.get(event.n);
        if (attempt !== undefined && !this.closing) this.deliveries.post(attempt.context);
        return;
      }
      case 'delivery.failed':
      case 'delivery.succeeded':
      case 'delivery.abandoned':
      case 'delivery.interrupted':
        if (event.type === 'delivery.abandoned') this.config.onDeliveryAbandoned?.(event);
        this.pump(session_id);
        return;
      case 'session.ended':
        this.idle.forget(session_id);
        // What the session said before it ended goes out before its streams close.
        this.deliver(session_id, frames.get(session_id) ?? []);
        frames.delete(session_id);
        for (const actor of [...(this.readers.get(session_id) ?? [])]) actor.close('session_ended');
        this.runs.get(session_id)?.abort();
        this.runs.delete(session_id);
        return;
    }
    // From the fold, not the event: a restart must arrive at the same deadline.
    if (!this.closing) this.idle.touch(session_id, this.lastActivityAt(session_id) + this.idleTtlMs);
  }

  private lastActivityAt(sessionId: string): number {
    return (this.sessions.get(sessionId) ?? this.conversations.get(sessionId))!.context.lastActivityAt;
  }

  private queueFrame(frames: Map<string, Frame[]>, sessionId: string, frame: Frame): void {
    if (!this.readers.has(sessionId)) return;
    const batch = frames.get(sessionId);
    if (batch === undefined) frames.set(sessionId, [frame]);
    else batch.push(frame);
  }

  private deliver(sessionId: string, batch: readonly Frame[]): void {
    const readers = this.readers.get(sessionId);
    if (readers === undefined || batch.length === 0) return;
    for (const actor of [...readers]) actor.deliver(batch);
  }

  // ---- callback delivery ------------------------------------------------------------------------

  /** Moves the session's outbox on: attempts its head if due, or wakes up when it will be. */
  private pump(sessionId: string): void {
    if (this.closing) return;
    const first = head(this.outboxes.get(sessionId) ?? EMPTY_OUTBOX);
    if (first === undefined || first.value !== 'waiting') return this.deliveries.wakeAt(sessionId, undefined);
    const now = this.clock.now();
    if (first.context.dueAt > now) return this.deliveries.wakeAt(sessionId, first.context.dueAt);
    this.deliveries.wakeAt(sessionId, undefined);
    // The attempt is logged first; its POST starts once `delivery.attempted` is committed (see `effect`).
    this.deliveryCommand(sessionId, { type: 'attempt', at: now }).catch(() => {});
  }

  /** Decides a command for the session's outbox head, and appends what it decides. */
  private async deliveryCommand(sessionId: string, command: DeliveryCommand): Promise<void> {
    const first = head(this.outboxes.get(sessionId) ?? EMPTY_OUTBOX);
    if (first === undefined) return;
    const events = decideDelivery(command, first);
    if (events.length > 0) await this.append(events);
  }

  /** What the transport reported for attempt `n`. A closing host decides nothing: the next start makes it again. */
  private answered(sessionId: string, n: number, outcome: CallbackOutcome): void {
    const delivery = this.outboxes.get(sessionId)?.queue.get(n);
    if (this.closing || delivery === undefined) return;
    const at = this.clock.now();
    const events: DeliveryEvent[] = decideDelivery({ type: 'outcome', outcome, at }, delivery);
    if (events.length === 0) return;
    this.append(events).catch(() => {});
    if (outcome.kind === 'answered' && events[0]!.type === 'delivery.succeeded' && outcome.sessionEnded) this.endedByClient(sessionId, at);
  }

  /**
   * The callback answered `{ok: true, ignored: true, reason: "session_ended"}`: the session ends here too,
   * and what is still queued for it (replies the end itself settled included) is abandoned, visibly. All
   * in the same batch as the answer's own event: each `run`/`append` folds before it awaits.
   */
  private endedByClient(sessionId: string, at: number): void {
    this.run({ type: 'end', session_id: sessionId, reason: 'client', epoch: this.epoch, at }).catch(() => {});
    const outbox = this.outboxes.get(sessionId) ?? EMPTY_OUTBOX;
    const abandoned = [...outbox.queue.values()].flatMap((delivery) => decideDelivery({ type: 'abandon', at }, delivery));
    if (abandoned.length > 0) this.append(abandoned).catch(() => {});
  }

  // ---- agent runs ------------------------------------------------------------------------------

  /** Runs the agent for a user message (a task in Form A, a message in Form B) once it is in the log. */
  private startAgent(sessionId: string, taskId: string, text: string): void {
    if (this.closing) return;
    const context = (this.sessions.get(sessionId) ?? this.conversations.get(sessionId))!.context;
    let controller = this.runs.get(sessionId);
    if (controller === undefined) {
      this.runs.set(sessionId, (controller = new AbortController()));
      // Every pending task of the session may listen to it: many at once is normal, not a leak.
      setMaxListeners(0, controller.signal);
    }
    const window: Window<MemoryEntry> = context.memory;
    let memory: readonly MemoryEntry[] | undefined;
    const turn: Turn = {
      session_id: sessionId,
      task_id: taskId,
      text,
      system_prelude: context.prelude,
      // Built on first read, from this fold's window (later pushes never change it): it copies up to
      // the memory bound, and many agents never look.
      get memory() {
        return (memory ??= memoryBefore(window, taskId));
      },
      insights: sessionId.startsWith(INSIGHTS_PREFIX),
    };
    const sink = this.sink(turn, controller.signal);
    Promise.resolve()
      .then(() => this.config.agent.respond(turn, sink))
      .then(
        () => this.finishRun(turn, false),
        (error: unknown) => {
          if (!controller.signal.aborted) this.config.onAgentError?.(error, turn);
          this.finishRun(turn, true);
        },
      );
  }

  /**
   * Form A: a run that ends with its task still pending settles it `agent_error`, so no task is left
   * pending forever. Form B: the end of the run is logged, and a failed run shows an error.
   */
  private finishRun(turn: Turn, failed: boolean): void {
    if (this.closing) return;
    const session = this.sessions.get(turn.session_id);
    // The common case, an answered task, needs no decision at all.
    if (session !== undefined && !session.context.pending.has(turn.task_id)) return;
    const command: SessionCommand = { type: 'finish', session_id: turn.session_id, task_id: turn.task_id, failed, epoch: this.epoch, at: this.clock.now() };
    void this.run(command).catch(() => {});
  }

  private sink(turn: Turn, signal: AbortSignal): ReplySink {
    const { session_id, task_id } = turn;
    // Agents are code we do not control: their replies are validated like any other input.
    const validate = (body: Record<string, unknown>) => ReplyBody.parse({ session_id, task_id, ...body });
    const send = async (body: Record<string, unknown>): Promise<void> => {
      await this.reply(session_id, task_id, validate(body));
    };
    // Progress is live-only: the agent need not wait for its commit, so it shares a batch (and a socket
    // write) with what the agent says next. Its frame still goes out only once committed; a failed
    // commit has already gone to onFatal, and a closing host drops progress on purpose.
    const progress = async (body: Record<string, unknown>): Promise<void> => {
      this.reply(session_id, task_id, validate(body)).catch(() => {});
    };
    return {
      signal,
      typing: (label) => progress({ status: 'typing', label }),
      toolCall: (label) => progress({ status: 'tool_call', label }),
      message: (text, options) => send({ status: 'message', message_id: options?.message_id ?? this.ids.uuid(), reply_text: text }),
      completed: () => send({ status: 'completed' }),
      silent: () => send({ status: 'silent' }),
      errored: (code, message) => send({ status: 'errored', error_code: code, error_message: message }),
      endSession: async () => {
        await this.endSession(session_id, 'agent');
      },
    };
  }
}

function crash(error: unknown): void {
  process.nextTick(() => {
    throw error;
  });
}

