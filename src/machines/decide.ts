/**
 * The session decider (Form A): `decide(command, state) → events`. Pure: the caller brings time, fresh
 * ids and the epoch as data, and folds the returned events through `evolveSession` before acting on
 * them. The commands are shared with the Form B decider (conversation-decide.ts).
 */
import {
  LIMITS,
  REPLY_ERRORS,
  callbackBody,
  isInsightsSession,
  replyBytes,
  type IncomingEvent,
  type ReplyBody,
  type TerminalReply,
} from '../protocol/index.js';
import type { EndReason, Form, SessionEvent, SessionOpened, SettleCause, TaskSettled, UserMessage } from './events.js';
import { asInsight } from './insights.js';
import { isEnded, pendingInOrder, type SessionSnapshot } from './session.js';
import type { TaskContext } from './task.js';

export type SessionCommand =
  /** `generation` is needed (and drawn by the caller) only when the session does not exist yet. */
  | { readonly type: 'incoming'; readonly event: IncomingEvent; readonly generation?: string; readonly at: number }
  /** The agent says something about a task (Form A) or in the conversation (Form B; `task_id` is the path handle). */
  | { readonly type: 'reply'; readonly session_id: string; readonly task_id: string; readonly reply: ReplyBody; readonly epoch: string; readonly at: number }
  /** The agent's run for a user message ended; `failed`: it threw rather than returned. */
  | { readonly type: 'finish'; readonly session_id: string; readonly task_id: string; readonly failed: boolean; readonly epoch: string; readonly at: number }
  | { readonly type: 'end'; readonly session_id: string; readonly reason: EndReason; readonly epoch: string; readonly at: number }
  | { readonly type: 'expire'; readonly session_id: string; readonly idleTtlMs: number; readonly epoch: string; readonly at: number }
  | { readonly type: 'interrupt'; readonly session_id: string; readonly epoch: string; readonly at: number };

export type Outcome =
  | 'accepted'
  | 'duplicate'
  | 'session_ended'
  /** Form B: the session has no callback yet and this message advertised none. */
  | 'callback_required'
  | 'progressed'
  | 'settled'
  /** Form B: the reply is in the outbox. */
  | 'queued'
  | 'dropped'
  | 'ended'
  | 'unchanged';

export interface Decision<E = SessionEvent> {
  readonly events: readonly E[];
  readonly outcome: Outcome;
}

/** What the decider may ask beyond the session snapshot: whether a task_id was ever started here. */
export interface DecisionContext {
  readonly taskKnown: (taskId: string) => boolean;
}

function hostError(session_id: string, task_id: string, code: keyof typeof REPLY_ERRORS): TerminalReply {
  return { session_id, task_id, status: 'errored', error_code: code, error_message: REPLY_ERRORS[code] };
}

/**
 * Settles a task. On the stream the reply takes the next seq; for a task with a callback it is queued as
 * the session's next delivery. `next` is that number. A reply over the size cap is replaced.
 */
function settle(session_id: string, task: TaskContext, next: number, reply: TerminalReply, cause: SettleCause, epoch: string, at: number): TaskSettled {
  const { task_id, callback } = task;
  const data = JSON.stringify(reply);
  if (replyBytes(callback === undefined ? data : callbackBody(reply)) > LIMITS.replyMaxBytes) {
    return settle(session_id, task, next, hostError(session_id, task_id, 'reply_too_large'), 'reply_too_large', epoch, at);
  }
  const base = { type: 'task.settled', session_id, task_id, reply, cause, at } as const;
  return callback === undefined
    ? { ...base, epoch, seq: next, data }
    : { ...base, delivery: { n: next, url: callback.url, token: callback.token, task_id } };
}

/** Settles every pending task with a host-made errored reply, in task start order. */
function settleAllPending(session: SessionSnapshot, code: 'interrupted' | 'session_ended', epoch: string, at: number): TaskSettled[] {
  const { session_id, backlog, deliveries } = session.context;
  let seq = backlog.lastSeq;
  let n = deliveries;
  return pendingInOrder(session).map(({ context: task }) =>
    settle(session_id, task, task.callback === undefined ? ++seq : ++n, hostError(session_id, task.task_id, code), code, epoch, at),
  );
}

function endSession(session: SessionSnapshot, reason: EndReason, epoch: string, at: number): SessionEvent[] {
  return [...settleAllPending(session, 'session_ended', epoch, at), { type: 'session.ended', session_id: session.context.session_id, reason, at }];
}

/**
 * An accepted user message, in either form: the session's opening if it is new (with the generation the
 * caller drew), and the message's own fields, which each form logs as its own event type.
 */
export function arrival(
  command: Extract<SessionCommand, { type: 'incoming' }>,
  opening: Form | undefined,
): { readonly opened: SessionOpened | undefined; readonly message: UserMessage } {
  const { event, at } = command;
  let opened: SessionOpened | undefined;
  if (opening !== undefined) {
    if (command.generation === undefined) throw new TypeError('opening a session needs a generation');
    opened = { type: 'session.opened', session_id: event.session_id, generation: command.generation, form: opening, at };
  }
  const message: UserMessage = {
    session_id: event.session_id,
    task_id: event.task_id,
    text: event.text,
    ...(event.system_prelude === undefined ? {} : { system_prelude: event.system_prelude }),
    ...(event.callback === undefined ? {} : { callback: event.callback }),
    at,
  };
  return { opened, message };
}

/** The session a command is about. */
export function commandSession(command: SessionCommand): string {
  return command.type === 'incoming' ? command.event.session_id : command.session_id;
}

export function decide(command: SessionCommand, session: SessionSnapshot | undefined, ctx: DecisionContext): Decision {
  switch (command.type) {
    case 'incoming': {
      if (session !== undefined && isEnded(session)) return { events: [], outcome: 'session_ended' };
      if (session !== undefined && ctx.taskKnown(command.event.task_id)) return { events: [], outcome: 'duplicate' };
      const { opened, message } = arrival(command, session === undefined ? 'A' : undefined);
      const started: SessionEvent = { type: 'task.started', ...message };
      return { events: opened === undefined ? [started] : [opened, started], outcome: 'accepted' };
    }
    case 'reply': {
      const { session_id, task_id, at } = command;
      const dropped = (reason: 'task_settled' | 'task_unknown' | 'session_ended'): Decision => ({
        events: [{ type: 'reply.dropped', session_id, task_id, status: command.reply.status, reason, at }],
        outcome: 'dropped',
      });
      if (session === undefined) return dropped('task_unknown');
      if (isEnded(session)) return dropped('session_ended');
      const task = session.context.pending.get(task_id)?.context;
      if (task === undefined) return dropped(ctx.taskKnown(task_id) ? 'task_settled' : 'task_unknown');
      const reply = isInsightsSession(session_id) ? asInsight(command.reply) : command.reply;
      const { deliveries } = session.context;
      if (reply.status === 'typing' || reply.status === 'tool_call') {
        const { callback } = task;
        const delivery = callback === undefined ? {} : { delivery: { n: deliveries + 1, url: callback.url, token: callback.token, task_id } };
        return { events: [{ type: 'task.progressed', session_id, task_id, reply, ...delivery, at }], outcome: 'progressed' };
      }
      const next = task.callback === undefined ? session.context.backlog.lastSeq + 1 : deliveries + 1;
      return { events: [settle(session_id, task, next, reply, 'agent', command.epoch, at)], outcome: 'settled' };
    }
    case 'finish': {
      // A run that ends with its task still pending settles it: no task is left pending forever.
      const task = session === undefined || isEnded(session) ? undefined : session.context.pending.get(command.task_id)?.context;
      if (session === undefined || task === undefined) return { events: [], outcome: 'unchanged' };
      const { session_id, backlog, deliveries } = session.context;
      const next = task.callback === undefined ? backlog.lastSeq + 1 : deliveries + 1;
      return {
        events: [settle(session_id, task, next, hostError(session_id, task.task_id, 'agent_error'), 'agent_error', command.epoch, command.at)],
        outcome: 'settled',
      };
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
