/**
 * The conversation decider (Form B, 3.2, 4.3 rule 2, 4.5 rule 3): the same commands as Form A's, with
 * no task to settle. Every reply is queued for the session's latest callback, at
 * `{callback.url}/tasks/{task_id}` where `task_id` is the user message's (or, for a message the agent
 * adds on its own, a fresh UUID the caller brings). Its state is the conversation statechart's snapshot,
 * or `undefined` for a session the log has not opened.
 */
import { LIMITS, callbackBody, isInsightsSession, replyBytes, type ReplyBody } from '../../protocol/index.js';
import { arrival, hostError, type Outcome, type SessionCommand } from './commands.js';
import {
  evolveConversation,
  initialConversation,
  isConversationEnded,
  type HostConversationContext,
  type ConversationLimits,
  type ConversationSnapshot,
} from './conversation.js';
import { openedBy, type Decider, type Decision } from '../core/decider.js';
import { isSessionOpened, type ConversationEvent, type ReplyCause, type ReplyQueued } from './events.js';
import { asInsight } from './insights.js';
import { knowsTaskId } from './task-ids.js';

export type ConversationState = ConversationSnapshot | undefined;

export type ConversationDecision = Decision<ConversationEvent, Outcome>;

/** Queues a reply as the conversation's next delivery (`n` counts them). A reply over the size cap is replaced. */
function queue(context: HostConversationContext, n: number, reply: ReplyBody, cause: ReplyCause, at: number): ReplyQueued {
  const { session_id, callback } = context;
  // Every conversation has a callback: its first message could not be accepted without one.
  if (callback === undefined) throw new TypeError(`conversation ${session_id} has no callback`);
  if (replyBytes(callbackBody(reply)) > LIMITS.replyMaxBytes) {
    return queue(context, n, hostError(session_id, reply.task_id, 'reply_too_large'), 'reply_too_large', at);
  }
  return { type: 'reply.queued', session_id, reply, cause, delivery: { n, task_id: reply.task_id }, at };
}

/** How a reply reads in Form B: `typing` is scoped to its user message (2.5); Insights get one sentence. */
function shape(context: HostConversationContext, reply: ReplyBody): ReplyBody {
  const scoped =
    reply.status === 'typing' && reply.user_message_id === undefined && context.running.has(reply.task_id)
      ? { ...reply, user_message_id: reply.task_id }
      : reply;
  return isInsightsSession(context.session_id) ? asInsight(scoped) : scoped;
}

const UNCHANGED: ConversationDecision = { events: [], outcome: 'unchanged' };

function decide(command: SessionCommand, conversation: ConversationState): ConversationDecision {
  const ended = conversation !== undefined && isConversationEnded(conversation);
  switch (command.type) {
    case 'incoming': {
      const { event } = command;
      if (ended) return { events: [], outcome: 'session_ended' };
      // A message whose run is still going is always known; one whose run ended while it is among the newest.
      const { task_id } = event;
      if (conversation !== undefined && (conversation.context.running.has(task_id) || knowsTaskId(conversation.context.taskIds, task_id))) {
        return { events: [], outcome: 'duplicate' };
      }
      if (event.callback === undefined && conversation?.context.callback === undefined) return { events: [], outcome: 'callback_required' };
      const { opened, message } = arrival(
        command,
        conversation === undefined ? { opens: 'B' } : { latest: conversation.context.callback, form: 'B' },
      );
      const received: ConversationEvent = { type: 'message.received', ...message };
      return { events: opened === undefined ? [received] : [opened, received], outcome: 'accepted' };
    }
    case 'reply': {
      const { session_id, task_id, at } = command;
      if (conversation === undefined || ended) {
        const reason = conversation === undefined ? 'task_unknown' : 'session_ended';
        return { events: [{ type: 'reply.dropped', session_id, task_id, status: command.reply.status, reason, at }], outcome: 'dropped' };
      }
      const { context } = conversation;
      return { events: [queue(context, context.deliveries + 1, shape(context, command.reply), 'agent', at)], outcome: 'queued' };
    }
    case 'finish': {
      if (conversation === undefined || ended || !conversation.context.running.has(command.task_id)) return UNCHANGED;
      const { context } = conversation;
      const { task_id, at } = command;
      const finished: ConversationEvent = { type: 'turn.finished', session_id: context.session_id, task_id, at };
      // A run that failed says so in the conversation ("shows an error", 2.5); one that returned said what it had to.
      if (!command.failed) return { events: [finished], outcome: 'unchanged' };
      const error = queue(context, context.deliveries + 1, hostError(context.session_id, task_id, 'agent_error'), 'agent_error', at);
      return { events: [error, finished], outcome: 'queued' };
    }
    case 'end':
    case 'expire': {
      if (conversation === undefined || ended) return UNCHANGED;
      const { context } = conversation;
      if (command.type === 'expire' && command.at < context.lastActivityAt + command.idleTtlMs) return UNCHANGED;
      const reason = command.type === 'end' ? command.reason : 'idle';
      return { events: [{ type: 'session.ended', session_id: context.session_id, reason, at: command.at }], outcome: 'ended' };
    }
    case 'interrupt': {
      if (conversation === undefined || ended) return UNCHANGED;
      // A run the restart cut off: the conversation shows an error where its answer would have been.
      const { context } = conversation;
      const events: ConversationEvent[] = [];
      let n = context.deliveries;
      for (const task_id of context.running) {
        events.push(queue(context, ++n, hostError(context.session_id, task_id, 'interrupted'), 'interrupted', command.at));
        events.push({ type: 'turn.finished', session_id: context.session_id, task_id, at: command.at });
      }
      return { events, outcome: events.length > 0 ? 'queued' : 'unchanged' };
    }
  }
}

export function conversationDecider(limits: ConversationLimits): Decider<ConversationState, SessionCommand, ConversationEvent, Outcome> {
  return openedBy({
    name: 'Form B conversation',
    idOf: (event) => event.session_id,
    decide,
    opens: isSessionOpened,
    open: (opened) => initialConversation(opened, limits),
    step: evolveConversation,
  });
}
