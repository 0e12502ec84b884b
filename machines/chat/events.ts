/**
 * The domain events: exactly what the event log stores, one type per fact. Every lifecycle's state is
 * the fold of these; nothing else is a source of truth. Time (`at`, epoch ms) and ids arrive as data.
 */
import type { CallbackBlock, ProgressReply, ReplyBody, TerminalReply } from '../../protocol/index.js';
import type { SessionLimits } from './session-limits.js';

/** Why a task settled: the agent's own terminal reply, or one the host put in its place. */
export type SettleCause = 'agent' | 'reply_too_large' | 'interrupted' | 'agent_error' | 'session_ended';
/** `client`: a callback answered `{ok: true, ignored: true, reason: "session_ended"}`. */
export type EndReason = 'host' | 'agent' | 'idle' | 'client';
export type DropReason = 'task_settled' | 'task_unknown' | 'session_ended';

/** Which form of the chat channel (1.6): A, tasks and a reply stream; B, an append-only conversation over callbacks. */
export type Form = 'A' | 'B';

export interface HostStarted {
  readonly type: 'host.started';
  readonly epoch: string;
  /** The form new sessions take (`serve --form`). */
  readonly form: Form;
  /**
   * The retention and memory bounds this process folds every session with (logs written before they were
   * logged lack them: the defaults). A replay folds with the bounds of the last start before its end.
   */
  readonly limits?: SessionLimits;
  readonly at: number;
}

export interface SessionOpened {
  readonly type: 'session.opened';
  readonly session_id: string;
  readonly generation: string;
  /** A session keeps the form it was opened in, whatever form the host runs later. */
  readonly form: Form;
  readonly at: number;
}

/**
 * A reply queued for callback delivery (4.3): this makes the reply's event an outbox entry, durable
 * before the first attempt. The body POSTed is the reply without `task_id` (`callbackBody`). It names no
 * callback: it goes where its task's user message said (Form A) or to the session's latest callback
 * (Form B) as the log stood when it was queued, so a callback is logged once, where it is advertised
 * (outbox.ts follows them).
 */
export interface Delivery {
  /** Counts the session's deliveries from 1: the outbox key, and the order of delivery. */
  readonly n: number;
  /** The POST goes to `{callback url}/tasks/{task_id}`. */
  readonly task_id: string;
  /** Logs written before callbacks were logged once carry the callback on every delivery. */
  readonly url?: string;
  readonly token?: string;
}

/** What a user message brings, in either form: the incoming event (2.9) as logged. */
export interface UserMessage {
  readonly session_id: string;
  readonly task_id: string;
  readonly text: string;
  readonly system_prelude?: string;
  /**
   * A callback the session does not have as its latest: logged here, once. Form A: this task's replies go
   * there instead of the stream (4.3 rule 1). Form B: where the session's replies go from now on. Its
   * token is kept in the log so that a restart can deliver; it is never in process logs.
   */
  readonly callback?: CallbackBlock;
  /** Form A: the message named the session's latest callback again, so this task's replies go there too. */
  readonly same_callback?: true;
  readonly at: number;
}

/** A user message starts a task (Form A). */
export interface TaskStarted extends UserMessage {
  readonly type: 'task.started';
}

/** `typing` / `tool_call`: live-only on the stream, logged so that nothing is sent that the log lacks. */
export interface TaskProgressed {
  readonly type: 'task.progressed';
  readonly session_id: string;
  readonly task_id: string;
  readonly reply: ProgressReply;
  /** Set for a task with a callback: the progress is POSTed there (durably), not framed. */
  readonly delivery?: Delivery;
  readonly at: number;
}

interface TaskSettledBase {
  readonly type: 'task.settled';
  readonly session_id: string;
  readonly task_id: string;
  readonly reply: TerminalReply;
  readonly cause: SettleCause;
  readonly at: number;
}

/**
 * The task is settled by its first terminal reply. On the stream, the reply took its event id and
 * entered the backlog; for a task with a callback, it went to the outbox instead (no id, no backlog).
 */
export type TaskSettled =
  | (TaskSettledBase & {
      readonly epoch: string;
      readonly seq: number;
      /** The reply's compact JSON, exactly as the stream carries it. */
      readonly data: string;
      readonly delivery?: undefined;
    })
  | (TaskSettledBase & { readonly delivery: Delivery; readonly epoch?: undefined; readonly seq?: undefined; readonly data?: undefined });

export interface ReplyDropped {
  readonly type: 'reply.dropped';
  readonly session_id: string;
  readonly task_id: string;
  readonly status: string;
  readonly reason: DropReason;
  readonly at: number;
}

export interface SessionEnded {
  readonly type: 'session.ended';
  readonly session_id: string;
  readonly reason: EndReason;
  readonly at: number;
}

// ---- Form B: the conversation (3.2) ------------------------------------------------------------

/** A user message joins the conversation (Form B). Its `task_id` (a UUID) is only a correlation handle (4.3 rule 3). */
export interface MessageReceived extends UserMessage {
  readonly type: 'message.received';
}

/** Why the host queued a reply: the agent said it, or the host put an error in the conversation. */
export type ReplyCause = 'agent' | 'reply_too_large' | 'interrupted' | 'agent_error';

/** Something the assistant adds to the conversation (Form B), queued for its callback. */
export interface ReplyQueued {
  readonly type: 'reply.queued';
  readonly session_id: string;
  readonly reply: ReplyBody;
  readonly cause: ReplyCause;
  readonly delivery: Delivery;
  readonly at: number;
}

/** The agent's run for a user message ended (Form B): nothing to interrupt on restart. */
export interface TurnFinished {
  readonly type: 'turn.finished';
  readonly session_id: string;
  readonly task_id: string;
  readonly at: number;
}

// ---- callback delivery (4.3, 8): every attempt and its outcome ---------------------------------

export interface DeliveryAttempted {
  readonly type: 'delivery.attempted';
  readonly session_id: string;
  readonly n: number;
  /** 1 to 4. */
  readonly attempt: number;
  readonly at: number;
}

/** A retryable failure: the next attempt is due at `retry_at`. */
export interface DeliveryFailed {
  readonly type: 'delivery.failed';
  readonly session_id: string;
  readonly n: number;
  readonly attempt: number;
  /** What happened, for people: `status 503`, `timeout`, `ECONNREFUSED`. */
  readonly outcome: string;
  readonly retry_at: number;
  readonly at: number;
}

export interface DeliverySucceeded {
  readonly type: 'delivery.succeeded';
  readonly session_id: string;
  readonly n: number;
  readonly attempt: number;
  readonly status: number;
  readonly at: number;
}

export type AbandonReason = 'permanent' | 'attempts_exhausted' | 'session_ended';

export interface DeliveryAbandoned {
  readonly type: 'delivery.abandoned';
  readonly session_id: string;
  readonly n: number;
  /** Attempts made (0 when abandoned before the first). */
  readonly attempts: number;
  readonly reason: AbandonReason;
  /** The last attempt's outcome, when there was one. */
  readonly outcome?: string;
  readonly at: number;
}

/** An attempt the host's restart cut off: its outcome is unknown, so it is made again (not counted). */
export interface DeliveryInterrupted {
  readonly type: 'delivery.interrupted';
  readonly session_id: string;
  readonly n: number;
  readonly attempt: number;
  readonly at: number;
}

/** Progress still waiting behind the head, replaced by a later reply for its task (`by`): it leaves the outbox unsent. */
export interface DeliverySuperseded {
  readonly type: 'delivery.superseded';
  readonly session_id: string;
  readonly n: number;
  /** The delivery that made it stale. */
  readonly by: number;
  readonly at: number;
}

export type DeliveryEvent =
  DeliveryAttempted | DeliveryFailed | DeliverySucceeded | DeliveryAbandoned | DeliveryInterrupted | DeliverySuperseded;

/** Events of a Form A session (the session statechart folds these). */
export type TaskSessionEvent = SessionOpened | TaskStarted | TaskProgressed | TaskSettled | ReplyDropped | SessionEnded;
/** Events of a Form B conversation (the conversation statechart folds these). */
export type ConversationEvent = SessionOpened | MessageReceived | ReplyQueued | TurnFinished | ReplyDropped | SessionEnded;
/**
 * Retention: sessions that ended before `ended_before` are forgotten, as if never opened; their events
 * may then be removed from the log (a fold with or without them ends the same, since this event is folded
 * either way). A session id forgotten and used again opens a new session.
 */
export interface SessionsForgotten {
  readonly type: 'sessions.forgotten';
  readonly session_ids: readonly string[];
  readonly ended_before: number;
  readonly at: number;
}

/** Events of the host as a whole, in no session's stream. */
export type HostEvent = HostStarted | SessionsForgotten;

export type DomainEvent = HostEvent | TaskSessionEvent | ConversationEvent | DeliveryEvent;
export type DomainEventType = DomainEvent['type'];

/** The log's stream of an event: its session, or '' for host-wide events. */
export function streamOf(event: DomainEvent): string {
  return isHostEvent(event) ? '' : event.session_id;
}

export function isHostEvent(event: DomainEvent): event is HostEvent {
  return event.type === 'host.started' || event.type === 'sessions.forgotten';
}

/**
 * Whether someone waits on the event's commit (a 202, a terminal frame, an agent's send). Progress is
 * live-only and nobody awaits it: it can wait for its batch, and usually shares the answer's.
 */
export function isUrgent(event: DomainEvent): boolean {
  return event.type !== 'task.progressed';
}

export function isDeliveryEvent(event: DomainEvent): event is DeliveryEvent {
  return event.type.startsWith('delivery.');
}

export function isSessionOpened(event: DomainEvent): event is SessionOpened {
  return event.type === 'session.opened';
}
