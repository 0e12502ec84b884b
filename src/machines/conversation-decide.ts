/**
 * The conversation decider (Form B, 3.2, 4.3 rule 2, 4.5 rule 3): the same commands as Form A's, with
 * no task to settle. Every reply is queued for the session's latest callback, at
 * `{callback.url}/tasks/{task_id}` where `task_id` is the user message's (or, for a message the agent
 * adds on its own, a fresh UUID the caller brings). Pure, like `decide`.
 */
import { LIMITS, REPLY_ERRORS, callbackBody, isInsightsSession, replyBytes, type ReplyBody } from '../protocol/index.js';
import type { ConversationEvent, ReplyCause, ReplyQueued } from './events.js';
import { isConversationEnded, type ConversationContext, type ConversationSnapshot } from './conversation.js';
import { arrival, type Decision, type DecisionContext, type SessionCommand } from './decide.js';
import { asInsight } from './insights.js';

function hostError(context: ConversationContext, task_id: string, code: 'reply_too_large' | 'interrupted' | 'agent_error'): ReplyBody {
  return { session_id: context.session_id, task_id, status: 'errored', error_code: code, error_message: REPLY_ERRORS[code] };
}

/** Queues a reply as the conversation's next delivery (`n` counts them). A reply over the size cap is replaced. */
function queue(context: ConversationContext, n: number, reply: ReplyBody, cause: ReplyCause, at: number): ReplyQueued {
  const { session_id, callback } = context;
  // Every conversation has a callback: its first message could not be accepted without one.
  if (callback === undefined) throw new TypeError(`conversation ${session_id} has no callback`);
  if (replyBytes(callbackBody(reply)) > LIMITS.replyMaxBytes) {
    return queue(context, n, hostError(context, reply.task_id, 'reply_too_large'), 'reply_too_large', at);
  }
  return { type: 'reply.queued', session_id, reply, cause, delivery: { n, url: callback.url, token: callback.token, task_id: reply.task_id }, at };
}

/** How a reply reads in Form B: `typing` is scoped to its user message (2.5); Insights get one sentence. */
function shape(context: ConversationContext, reply: ReplyBody): ReplyBody {
  const scoped =
    reply.status === 'typing' && reply.user_message_id === undefined && context.running.has(reply.task_id)
      ? { ...reply, user_message_id: reply.task_id }
      : reply;
  return isInsightsSession(context.session_id) ? asInsight(scoped) : scoped;
}

export function decideConversation(
  command: SessionCommand,
  conversation: ConversationSnapshot | undefined,
  ctx: DecisionContext,
): Decision<ConversationEvent> {
  const ended = conversation !== undefined && isConversationEnded(conversation);
  switch (command.type) {
    case 'incoming': {
      const { event } = command;
      if (ended) return { events: [], outcome: 'session_ended' };
      if (conversation !== undefined && ctx.taskKnown(event.task_id)) return { events: [], outcome: 'duplicate' };
      if (event.callback === undefined && conversation?.context.callback === undefined) return { events: [], outcome: 'callback_required' };
      const { opened, message } = arrival(command, conversation === undefined ? 'B' : undefined);
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
      if (conversation === undefined || ended || !conversation.context.running.has(command.task_id)) return { events: [], outcome: 'unchanged' };
      const { context } = conversation;
      const { task_id, at } = command;
      const finished: ConversationEvent = { type: 'turn.finished', session_id: context.session_id, task_id, at };
      // A run that failed says so in the conversation ("shows an error", 2.5); one that returned said what it had to.
      if (!command.failed) return { events: [finished], outcome: 'unchanged' };
      return { events: [queue(context, context.deliveries + 1, hostError(context, task_id, 'agent_error'), 'agent_error', at), finished], outcome: 'queued' };
    }
    case 'end':
    case 'expire': {
      if (conversation === undefined || ended) return { events: [], outcome: 'unchanged' };
      const { context } = conversation;
      if (command.type === 'expire' && command.at < context.lastActivityAt + command.idleTtlMs) return { events: [], outcome: 'unchanged' };
      const reason = command.type === 'end' ? command.reason : 'idle';
      return { events: [{ type: 'session.ended', session_id: context.session_id, reason, at: command.at }], outcome: 'ended' };
    }
    case 'interrupt': {
      if (conversation === undefined || ended) return { events: [], outcome: 'unchanged' };
      // A run the restart cut off: the conversation shows an error where its answer would have been.
      const { context } = conversation;
      const events: ConversationEvent[] = [];
      let n = context.deliveries;
      for (const task_id of context.running) {
        events.push(queue(context, ++n, hostError(context, task_id, 'interrupted'), 'interrupted', command.at));
        events.push({ type: 'turn.finished', session_id: context.session_id, task_id, at: command.at });
      }
      return { events, outcome: events.length > 0 ? 'queued' : 'unchanged' };
    }
  }
}
