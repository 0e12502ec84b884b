/**
 * What the chat engine tells an operator of itself at a moment (sessions open, tasks pending, readers,
 * callback deliveries queued): read from the fold when asked (a scrape of `/metrics`), so that no turn
 * pays for it.
 */
import { isConversationEnded } from '../../machines/chat/conversation.js';
import { isTaskSessionEnded } from '../../machines/chat/task-session.js';
import type { ChatState } from './projection.js';

export interface ChatGauges {
  /** Sessions of either form not ended. */
  readonly sessionsOpen: number;
  /** Form A tasks not settled, and Form B user messages whose agent run has not finished. */
  readonly tasksPending: number;
  /** Live readers of the sessions' reply streams. */
  readonly readers: number;
  /** Callback deliveries waiting in the outboxes (the head of each possibly in flight). */
  readonly deliveriesQueued: number;
}

export function chatGauges(state: ChatState, readers: number): ChatGauges {
  let sessionsOpen = 0;
  let tasksPending = 0;
  for (const session of state.sessions.values()) {
    if (!isTaskSessionEnded(session)) sessionsOpen += 1;
    tasksPending += session.context.pending.size;
  }
  for (const conversation of state.conversations.values()) {
    if (!isConversationEnded(conversation)) sessionsOpen += 1;
    tasksPending += conversation.context.running.size;
  }
  let deliveriesQueued = 0;
  for (const outbox of state.outboxes.values()) deliveriesQueued += outbox.queue.size;
  return { sessionsOpen, tasksPending, readers, deliveriesQueued };
}
