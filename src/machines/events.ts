/**
 * The domain events: exactly what the event log stores, one type per fact. Every lifecycle's state is
 * the fold of these; nothing else is a source of truth. Time (`at`, epoch ms) and ids arrive as data.
 */
import type { ProgressReply, TerminalReply } from '../protocol/index.js';

/** Why a task settled: the agent's own terminal reply, or one the host put in its place. */
export type SettleCause = 'agent' | 'reply_too_large' | 'interrupted' | 'agent_error' | 'session_ended';
export type EndReason = 'host' | 'agent' | 'idle';
export type DropReason = 'task_settled' | 'task_unknown' | 'session_ended';

export interface HostStarted {
  readonly type: 'host.started';
  readonly epoch: string;
  readonly at: number;
}

export interface SessionOpened {
  readonly type: 'session.opened';
  readonly session_id: string;
  readonly generation: string;
  readonly at: number;
}

export interface TaskStarted {
  readonly type: 'task.started';
  readonly session_id: string;
  readonly task_id: string;
  readonly text: string;
  readonly system_prelude?: string;
  readonly at: number;
}

/** `typing` / `tool_call`: live-only on the stream, logged so that nothing is sent that the log lacks. */
export interface TaskProgressed {
  readonly type: 'task.progressed';
  readonly session_id: string;
  readonly task_id: string;
  readonly reply: ProgressReply;
  readonly at: number;
}

/** A terminal reply took its event id and entered the backlog; the task is settled. */
export interface TaskSettled {
  readonly type: 'task.settled';
  readonly session_id: string;
  readonly task_id: string;
  readonly epoch: string;
  readonly seq: number;
  readonly reply: TerminalReply;
  /** The reply's compact JSON, exactly as the stream carries it. */
  readonly data: string;
  readonly cause: SettleCause;
  readonly at: number;
}

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

export type SessionEvent = SessionOpened | TaskStarted | TaskProgressed | TaskSettled | ReplyDropped | SessionEnded;
export type DomainEvent = HostStarted | SessionEvent;
export type DomainEventType = DomainEvent['type'];
