/**
 * The task session decider (Form A): what a command means for one session, as events. Its state is the task
 * session statechart's snapshot, or `undefined` for a session the log has not opened; `evolve` is the statechart's
 * pure transition. The commands are shared with the Form B decider (conversation-decider.ts).
 */
import { LIMITS, callbackBody, isInsightsSession, replyBytes, type TerminalReply } from '../../protocol/index.js';
import { arrival, hostError, type Outcome, type SessionCommand } from './commands.js';
import { openedBy, type Decider, type Decision } from '../core/decider.js';
import { isSessionOpened, type EndReason, type TaskSessionEvent, type SettleCause, type TaskSettled } from './events.js';
import { asInsight } from './insights.js';
import {
  evolveTaskSession,
  initialTaskSession,
  isTaskSessionEnded,
  pendingInOrder,
  type SessionLimits,
  type TaskSessionSnapshot,
} from './task-session.js';
import { knowsTaskId } from './task-ids.js';
import type { TaskContext } from './task.js';

/** A session as the decider sees it: not opened yet, or its snapshot. */
export type TaskSessionState = TaskSessionSnapshot | undefined;

export type TaskSessionDecision = Decision<TaskSessionEvent, Outcome>;

/**
 * Settles a task. On the stream the reply takes the next seq; for a task with a callback it is queued as
 * the session's next delivery. `next` is that number. A reply over the size cap is replaced.
 */
function settle(
  session_id: string,
  task: TaskContext,
  next: number,
  reply: TerminalReply,
  cause: SettleCause,
  epoch: string,
  at: number,
): TaskSettled {
  const { task_id, callback } = task;
  const data = JSON.stringify(reply);
  if (replyBytes(callback === undefined ? data : callbackBody(reply)) > LIMITS.replyMaxBytes) {
    return settle(session_id, task, next, hostError(session_id, task_id, 'reply_too_large'), 'reply_too_large', epoch, at);
  }
  const base = { type: 'task.settled', session_id, task_id, reply, cause, at } as const;
  return callback === undefined ? { ...base, epoch, seq: next, data } : { ...base, delivery: { n: next, task_id } };
}

/** The number a task's terminal reply takes: its seq on the stream, or its delivery number. */
function nextFor(session: TaskSessionSnapshot, task: TaskContext): number {
  return task.callback === undefined ? session.context.backlog.lastSeq + 1 : session.context.deliveries + 1;
}

/** Settles every pending task with a host-made errored reply, in task start order. */
function settleAllPending(session: TaskSessionSnapshot, code: 'interrupted' | 'session_ended', epoch: string, at: number): TaskSettled[] {
  const { session_id, backlog, deliveries } = session.context;
  let seq = backlog.lastSeq;
  let n = deliveries;
  return pendingInOrder(session).map(({ context: task }) =>
    settle(session_id, task, task.callback === undefined ? ++seq : ++n, hostError(session_id, task.task_id, code), code, epoch, at),
  );
}

function endSession(session: TaskSessionSnapshot, reason: EndReason, epoch: string, at: number): TaskSessionEvent[] {
  return [
    ...settleAllPending(session, 'session_ended', epoch, at),
    { type: 'session.ended', session_id: session.context.session_id, reason, at },
  ];
}

/** A pending task is always known; a settled one while it is among the newest task ids. */
function knowsTask(session: TaskSessionSnapshot, taskId: string): boolean {
  return session.context.pending.has(taskId) || knowsTaskId(session.context.taskIds, taskId);
}

const UNCHANGED: TaskSessionDecision = { events: [], outcome: 'unchanged' };

function decide(command: SessionCommand, session: TaskSessionState): TaskSessionDecision {
  switch (command.type) {
    case 'incoming': {
      if (session !== undefined && isTaskSessionEnded(session)) return { events: [], outcome: 'session_ended' };
      if (session !== undefined && knowsTask(session, command.event.task_id)) return { events: [], outcome: 'duplicate' };
      const { opened, message } = arrival(
        command,
        session === undefined ? { opens: 'A' } : { latest: session.context.callback, form: 'A' },
      );
      const started: TaskSessionEvent = { type: 'task.started', ...message };
      return { events: opened === undefined ? [started] : [opened, started], outcome: 'accepted' };
    }
    case 'reply': {
      const { session_id, task_id, at } = command;
      const dropped = (reason: 'task_settled' | 'task_unknown' | 'session_ended'): TaskSessionDecision => ({
        events: [{ type: 'reply.dropped', session_id, task_id, status: command.reply.status, reason, at }],
        outcome: 'dropped',
      });
      if (session === undefined) return dropped('task_unknown');
      if (isTaskSessionEnded(session)) return dropped('session_ended');
      const task = session.context.pending.get(task_id)?.context;
      if (task === undefined) return dropped(knowsTask(session, task_id) ? 'task_settled' : 'task_unknown');
      const reply = isInsightsSession(session_id) ? asInsight(command.reply) : command.reply;
      if (reply.status === 'typing' || reply.status === 'tool_call') {
        const { callback } = task;
        const delivery = callback === undefined ? {} : { delivery: { n: session.context.deliveries + 1, task_id } };
        return { events: [{ type: 'task.progressed', session_id, task_id, reply, ...delivery, at }], outcome: 'progressed' };
      }
      return { events: [settle(session_id, task, nextFor(session, task), reply, 'agent', command.epoch, at)], outcome: 'settled' };
    }
    case 'finish': {
      // A run that ends with its task still pending settles it: no task is left pending forever.
      const task = session === undefined || isTaskSessionEnded(session) ? undefined : session.context.pending.get(command.task_id)?.context;
      if (session === undefined || task === undefined) return UNCHANGED;
      const { session_id } = session.context;
      const reply = hostError(session_id, task.task_id, 'agent_error');
      return {
        events: [settle(session_id, task, nextFor(session, task), reply, 'agent_error', command.epoch, command.at)],
        outcome: 'settled',
      };
    }
    case 'end': {
      if (session === undefined || isTaskSessionEnded(session)) return UNCHANGED;
      return { events: endSession(session, command.reason, command.epoch, command.at), outcome: 'ended' };
    }
    case 'expire': {
      if (session === undefined || isTaskSessionEnded(session)) return UNCHANGED;
      if (command.at < session.context.lastActivityAt + command.idleTtlMs) return UNCHANGED;
      return { events: endSession(session, 'idle', command.epoch, command.at), outcome: 'ended' };
    }
    case 'interrupt': {
      if (session === undefined) return UNCHANGED;
      const events = settleAllPending(session, 'interrupted', command.epoch, command.at);
      return { events, outcome: events.length > 0 ? 'settled' : 'unchanged' };
    }
  }
}

export function taskSessionDecider(limits: SessionLimits): Decider<TaskSessionState, SessionCommand, TaskSessionEvent, Outcome> {
  return openedBy({
    name: 'Form A session',
    idOf: (event) => event.session_id,
    decide,
    opens: isSessionOpened,
    open: (opened) => initialTaskSession(opened, limits),
    step: evolveTaskSession,
  });
}
