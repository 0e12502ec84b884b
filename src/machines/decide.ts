/**
 * The session decider: `decide(command, state) → events`. Pure: the caller brings time, fresh ids and the
 * epoch as data, and folds the returned events through `evolveSession` before acting on them.
 */
import { LIMITS, REPLY_ERRORS, replyBytes, type IncomingEvent, type ReplyBody, type TerminalReply } from '../protocol/index.js';
import type { EndReason, SessionEvent, SettleCause, TaskSettled } from './events.js';
import { isEnded, pendingInOrder, type SessionSnapshot } from './session.js';

export type SessionCommand =
  /** `generation` is needed (and drawn by the caller) only when the session does not exist yet. */
  | { readonly type: 'incoming'; readonly event: IncomingEvent; readonly generation?: string; readonly at: number }
  | { readonly type: 'reply'; readonly session_id: string; readonly task_id: string; readonly reply: ReplyBody; readonly epoch: string; readonly at: number }
  | { readonly type: 'fail'; readonly session_id: string; readonly task_id: string; readonly cause: 'agent_error'; readonly epoch: string; readonly at: number }
  | { readonly type: 'end'; readonly session_id: string; readonly reason: EndReason; readonly epoch: string; readonly at: number }
  | { readonly type: 'expire'; readonly session_id: string; readonly idleTtlMs: number; readonly epoch: string; readonly at: number }
  | { readonly type: 'interrupt'; readonly session_id: string; readonly epoch: string; readonly at: number };

export type Outcome =
  | 'accepted'
  | 'duplicate'
  | 'session_ended'
  | 'progressed'
  | 'settled'
  | 'dropped'
  | 'ended'
  | 'unchanged';

export interface Decision {
  readonly events: readonly SessionEvent[];
  readonly outcome: Outcome;
}

/** What the decider may ask beyond the session snapshot: whether a task_id was ever started here. */
export interface DecisionContext {
  readonly taskKnown: (taskId: string) => boolean;
}

function hostError(session_id: string, task_id: string, code: keyof typeof REPLY_ERRORS): TerminalReply {
  return { session_id, task_id, status: 'errored', error_code: code, error_message: REPLY_ERRORS[code] };
}

function settle(
  session: SessionSnapshot,
  seq: number,
  task_id: string,
  reply: TerminalReply,
  cause: SettleCause,
  epoch: string,
  at: number,
): TaskSettled {
  const data = JSON.stringify(reply);
  if (replyBytes(data) > LIMITS.replyMaxBytes) {
    return settle(session, seq, task_id, hostError(session.context.session_id, task_id, 'reply_too_large'), 'reply_too_large', epoch, at);
  }
  return { type: 'task.settled', session_id: session.context.session_id, task_id, epoch, seq, reply, data, cause, at };
}

/** Settles every pending task with a host-made errored reply, in task start order. */
function settleAllPending(session: SessionSnapshot, code: 'interrupted' | 'session_ended', epoch: string, at: number): TaskSettled[] {
  const { session_id } = session.context;
  return pendingInOrder(session).map(({ context: { task_id } }, i) =>
    settle(session, session.context.backlog.lastSeq + 1 + i, task_id, hostError(session_id, task_id, code), code, epoch, at),
  );
}

function endSession(session: SessionSnapshot, reason: EndReason, epoch: string, at: number): SessionEvent[] {
  return [...settleAllPending(session, 'session_ended', epoch, at), { type: 'session.ended', session_id: session.context.session_id, reason, at }];
}

/** The session a command is about. */
export function commandSession(command: SessionCommand): string {
  return command.type === 'incoming' ? command.event.session_id : command.session_id;
}

export function decide(command: SessionCommand, session: SessionSnapshot | undefined, ctx: DecisionContext): Decision {
  switch (command.type) {
    case 'incoming': {
      const { event, at } = command;
      if (session !== undefined && isEnded(session)) return { events: [], outcome: 'session_ended' };
      if (session !== undefined && ctx.taskKnown(event.task_id)) return { events: [], outcome: 'duplicate' };
      const events: SessionEvent[] = [];
      if (session === undefined) {
        if (command.generation === undefined) throw new TypeError('opening a session needs a generation');
        events.push({ type: 'session.opened', session_id: event.session_id, generation: command.generation, at });
      }
      events.push({
        type: 'task.started',
        session_id: event.session_id,
        task_id: event.task_id,
        text: event.text,
        ...(event.system_prelude === undefined ? {} : { system_prelude: event.system_prelude }),
        at,
      });
      return { events, outcome: 'accepted' };
    }
    case 'reply':
    case 'fail': {
      const { session_id, task_id, at } = command;
      const status = command.type === 'reply' ? command.reply.status : 'errored';
      const dropped = (reason: 'task_settled' | 'task_unknown' | 'session_ended'): Decision => ({
        events: [{ type: 'reply.dropped', session_id, task_id, status, reason, at }],
        outcome: 'dropped',
      });
      if (session === undefined) return dropped('task_unknown');
      if (isEnded(session)) return dropped('session_ended');
      if (!session.context.pending.has(task_id)) {
        return dropped(ctx.taskKnown(task_id) ? 'task_settled' : 'task_unknown');
      }
      const seq = session.context.backlog.lastSeq + 1;
      if (command.type === 'fail') {
        return { events: [settle(session, seq, task_id, hostError(session_id, task_id, 'agent_error'), 'agent_error', command.epoch, at)], outcome: 'settled' };
      }
      const { reply } = command;
      if (reply.status === 'typing' || reply.status === 'tool_call') {
        return { events: [{ type: 'task.progressed', session_id, task_id, reply, at }], outcome: 'progressed' };
      }
      return { events: [settle(session, seq, task_id, reply, 'agent', command.epoch, at)], outcome: 'settled' };
    }
    case 'end': {
      if (session === undefined || isEnded(session)) return { events: [], outcome: 'unchanged' };
      return { events: endSession(session, command.reason, command.epoch, command.at), outcome: 'ended' };
    }
    case 'expire': {
      if (session === undefined || isEnded(session)) return { events: [], outcome: 'unchanged' };
      if (command.at < session.context.lastActivityAt + command.idleTtlMs) return { events: [], outcome: 'unchanged' };
      return { events: endSession(session, 'idle', command.epoch, command.at), outcome: 'ended' };
    }
    case 'interrupt': {
      if (session === undefined) return { events: [], outcome: 'unchanged' };
      const events = settleAllPending(session, 'interrupted', command.epoch, command.at);
      return { events, outcome: events.length > 0 ? 'settled' : 'unchanged' };
    }
  }
}
