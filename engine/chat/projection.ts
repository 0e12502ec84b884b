/**
 * The chat projection: every session's folded state, by form, and its callback outbox, built by folding
 * logged events through the deciders' `evolve`. No I/O, no clock: a test drives it with events alone, and
 * the same events always give the same state (so a restart, or a replay, rebuilds it exactly). It also
 * routes a command to the decider of the session's form, and answers the read-side questions (views).
 */
import type { Outcome, SessionCommand } from '../../machines/chat/commands.js';
import { commandSession } from '../../machines/chat/commands.js';
import { conversationDecider } from '../../machines/chat/conversation-decider.js';
import { isConversationEnded, type HostConversationContext, type ConversationSnapshot } from '../../machines/chat/conversation.js';
import type { Decision } from '../../machines/core/decider.js';
import {
  isDeliveryEvent,
  type ConversationEvent,
  type DeliveryEvent,
  type DomainEvent,
  type Form,
  type MessageReceived,
  type TaskSessionEvent,
  type TaskStarted,
} from '../../machines/chat/events.js';
import {
  emptyOutbox,
  outboxDecider,
  type Outbox,
  type OutboxCommand,
  type OutboxEvent,
  type OutboxOutcome,
} from '../../machines/chat/outbox.js';
import { taskSessionDecider } from '../../machines/chat/task-session-decider.js';
import {
  isTaskSessionEnded,
  type TaskSessionContext,
  type SessionLimits,
  type TaskSessionSnapshot,
} from '../../machines/chat/task-session.js';
import { conversationView, taskSessionView, type DeliveryStats, type SessionView } from './view.js';
import type { ReaderView } from '../core/subscription-actor.js';

/** Everything the chat projection holds: what a snapshot stores (state-codec.ts encodes it). */
export interface ChatState {
  readonly sessions: ReadonlyMap<string, TaskSessionSnapshot>;
  readonly conversations: ReadonlyMap<string, ConversationSnapshot>;
  readonly outboxes: ReadonlyMap<string, Outbox>;
}

export class ChatProjection {
  /** Form A sessions. */
  private readonly sessions = new Map<string, TaskSessionSnapshot>();
  /** Form B conversations. A session_id is in one of the two maps, never both. */
  private readonly conversations = new Map<string, ConversationSnapshot>();
  /** Callback deliveries per session, for both forms. */
  private readonly outboxes = new Map<string, Outbox>();
  private readonly formA: ReturnType<typeof taskSessionDecider>;
  private readonly formB: ReturnType<typeof conversationDecider>;

  constructor(limits: SessionLimits) {
    this.formA = taskSessionDecider(limits);
    this.formB = conversationDecider(limits);
  }

  /** The folded state as it stands (shared, not copied: encode it before folding on). */
  state(): ChatState {
    return { sessions: this.sessions, conversations: this.conversations, outboxes: this.outboxes };
  }

  /** Takes the state a snapshot held, in place of what was folded so far (nothing, at a start). */
  restore(state: ChatState): void {
    for (const [mine, theirs] of [
      [this.sessions, state.sessions],
      [this.conversations, state.conversations],
      [this.outboxes, state.outboxes],
    ] as const) {
      (mine as Map<string, unknown>).clear();
      for (const [key, value] of theirs) (mine as Map<string, unknown>).set(key, value);
    }
  }

  /** Folds one event. */
  apply(event: DomainEvent): void {
    if (isDeliveryEvent(event)) return this.foldOutbox(event);
    switch (event.type) {
      case 'host.started':
        return;
      case 'sessions.forgotten':
        for (const id of event.session_ids) {
          this.sessions.delete(id);
          this.conversations.delete(id);
          this.outboxes.delete(id);
        }
        return;
      case 'session.opened':
        return event.form === 'A' ? this.foldSession(event) : this.foldConversation(event);
      case 'task.started':
        this.foldSession(event);
        return this.foldAdvertised(event);
      case 'task.progressed':
      case 'task.settled':
        this.foldSession(event);
        // A reply with a `delivery` is an outbox entry too.
        if (event.delivery !== undefined) this.foldOutbox(event);
        return;
      case 'message.received':
        this.foldConversation(event);
        return this.foldAdvertised(event);
      case 'turn.finished':
        return this.foldConversation(event);
      case 'reply.queued':
        this.foldConversation(event);
        return this.foldOutbox(event);
      case 'reply.dropped':
        return this.sessions.has(event.session_id) ? this.foldSession(event) : this.foldConversation(event);
      case 'session.ended':
        if (this.sessions.has(event.session_id)) this.foldSession(event);
        else this.foldConversation(event);
        if (this.outboxes.has(event.session_id)) this.foldOutbox(event);
        return;
    }
  }

  private foldSession(event: TaskSessionEvent): void {
    const next = this.formA.evolve(this.sessions.get(event.session_id), event);
    if (next !== undefined) this.sessions.set(event.session_id, next);
  }

  private foldConversation(event: ConversationEvent): void {
    const next = this.formB.evolve(this.conversations.get(event.session_id), event);
    if (next !== undefined) this.conversations.set(event.session_id, next);
  }

  /** Only a message that names a callback concerns the outbox: other sessions need none. */
  private foldAdvertised(event: TaskStarted | MessageReceived): void {
    if (event.callback !== undefined || event.same_callback === true) this.foldOutbox(event);
  }

  private foldOutbox(event: OutboxEvent): void {
    this.outboxes.set(event.session_id, outboxDecider.evolve(this.outbox(event.session_id), event));
  }

  /** The form a session was opened in; `undefined` for one the log has not opened. */
  formOf(sessionId: string): Form | undefined {
    if (this.sessions.has(sessionId)) return 'A';
    return this.conversations.has(sessionId) ? 'B' : undefined;
  }

  /** Decides a command with the decider of the session's form; a new session takes `newForm`. */
  decide(command: SessionCommand, newForm: Form): Decision<DomainEvent, Outcome> {
    const sessionId = commandSession(command);
    return (this.formOf(sessionId) ?? newForm) === 'A'
      ? this.formA.decide(command, this.sessions.get(sessionId))
      : this.formB.decide(command, this.conversations.get(sessionId));
  }

  decideOutbox(sessionId: string, command: OutboxCommand): Decision<DeliveryEvent, OutboxOutcome> {
    return outboxDecider.decide(command, this.outbox(sessionId));
  }

  taskSession(sessionId: string): TaskSessionSnapshot | undefined {
    return this.sessions.get(sessionId);
  }

  conversation(sessionId: string): ConversationSnapshot | undefined {
    return this.conversations.get(sessionId);
  }

  /** What both forms' contexts say alike (memory, prelude, activity), for a session the log opened. */
  context(sessionId: string): TaskSessionContext | HostConversationContext | undefined {
    return (this.sessions.get(sessionId) ?? this.conversations.get(sessionId))?.context;
  }

  isEnded(sessionId: string): boolean {
    const session = this.sessions.get(sessionId);
    if (session !== undefined) return isTaskSessionEnded(session);
    const conversation = this.conversations.get(sessionId);
    return conversation !== undefined && isConversationEnded(conversation);
  }

  outbox(sessionId: string): Outbox {
    return this.outboxes.get(sessionId) ?? emptyOutbox;
  }

  /** Sessions of either form, in the order they opened. */
  sessionIds(): string[] {
    return [...this.sessions.keys(), ...this.conversations.keys()];
  }

  /** Sessions with callback deliveries, delivered or not. */
  outboxSessionIds(): string[] {
    return [...this.outboxes.keys()];
  }

  view(sessionId: string, readers: readonly ReaderView[]): SessionView | undefined {
    const outbox = this.outbox(sessionId);
    const session = this.sessions.get(sessionId);
    if (session !== undefined) return taskSessionView(session, readers, outbox);
    const conversation = this.conversations.get(sessionId);
    return conversation === undefined ? undefined : conversationView(conversation, outbox);
  }

  /**
   * Sessions that ended before `endedBefore` with no callback delivery still queued, oldest end first, at
   * most `max`: what retention may forget.
   */
  forgettable(endedBefore: number, max: number): string[] {
    const ended: Array<[string, number]> = [];
    for (const [id, snapshot] of [...this.sessions, ...this.conversations]) {
      const endedAt = snapshot.context.endedAt;
      if (endedAt !== undefined && endedAt < endedBefore && this.outbox(id).queue.size === 0) ended.push([id, endedAt]);
    }
    return ended
      .sort((a, b) => a[1] - b[1])
      .slice(0, max)
      .map(([id]) => id);
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
}

/**
 * A Form A session as its own logged events leave it, before any end: what a reconnect replays when
 * memory cannot say (an ended session keeps no replies; a reply not yet committed may have evicted one
 * that is). The log holds only what is committed.
 */
export function replayableSession(limits: SessionLimits, events: Iterable<DomainEvent>): TaskSessionSnapshot | undefined {
  const decider = taskSessionDecider(limits);
  let session = decider.initialState;
  for (const event of events) {
    switch (event.type) {
      case 'session.ended':
        return session;
      case 'session.opened':
      case 'task.started':
      case 'task.progressed':
      case 'task.settled':
      case 'reply.dropped':
        session = decider.evolve(session, event);
        break;
      default:
        break;
    }
  }
  return session;
}
