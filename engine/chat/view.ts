/** A read-only, JSON-ready picture of one session for the embedding API and the inspection route. */
import { formatEventId } from '../../protocol/index.js';
import { isConversationEnded, type ConversationSnapshot } from '../../machines/chat/conversation.js';
import type { Outbox } from '../../machines/chat/outbox.js';
import { isTaskSessionEnded, pendingInOrder, type TaskSessionSnapshot } from '../../machines/chat/task-session.js';
import { newest, windowToArray } from '../../machines/core/window.js';
import type { ReaderView } from '../core/subscription-actor.js';

/** Callback deliveries: queued now (the head possibly in flight), and how many succeeded or were abandoned. */
export interface DeliveryStats {
  readonly queued: number;
  readonly succeeded: number;
  readonly abandoned: number;
}

interface CommonView {
  readonly session_id: string;
  readonly state: 'open' | 'ended';
  readonly opened_at: number;
  readonly last_activity_at: number;
  readonly ended_at: number | null;
  readonly end_reason: string | null;
  readonly callbacks: DeliveryStats;
}

export type SessionView = TaskSessionView | ConversationView;

/** Form A: tasks, the retained backlog and its readers. */
export interface TaskSessionView extends CommonView {
  readonly form: 'A';
  readonly generation: string;
  readonly pending_task_ids: readonly string[];
  /** Id of the newest terminal reply, or null before the first. */
  readonly last_event_id: string | null;
  readonly backlog: readonly { readonly id: string; readonly task_id: string }[];
  readonly backlog_bytes: number;
  readonly evicted_task_ids: readonly string[];
  /** Cursors at or below this seq can no longer be reconciled exactly. */
  readonly ledger_floor: number;
  readonly readers: number;
  /** Each live reader's subscription: its state (`live.flowing`, `live.blocked`, `closing`) and what waits for its socket. */
  readonly reader_states: readonly ReaderView[];
}

/** Form B: the conversation and where its replies go (the URL only: the token is a secret). */
export interface ConversationView extends CommonView {
  readonly form: 'B';
  readonly callback_url: string | null;
  /** User messages whose agent run has not finished. */
  readonly running_task_ids: readonly string[];
}

/** What both forms' contexts say alike. */
interface Lifetime {
  readonly session_id: string;
  readonly openedAt: number;
  readonly lastActivityAt: number;
  readonly endedAt: number | undefined;
  readonly endReason: string | undefined;
}

function commonView(context: Lifetime, ended: boolean, outbox: Outbox): CommonView {
  return {
    session_id: context.session_id,
    state: ended ? 'ended' : 'open',
    opened_at: context.openedAt,
    last_activity_at: context.lastActivityAt,
    ended_at: context.endedAt ?? null,
    end_reason: context.endReason ?? null,
    callbacks: { queued: outbox.queue.size, succeeded: outbox.succeeded, abandoned: outbox.abandoned },
  };
}

export function taskSessionView(session: TaskSessionSnapshot, readers: readonly ReaderView[], outbox: Outbox): TaskSessionView {
  const { context } = session;
  const { backlog } = context;
  const lastSpan = newest(backlog.spans);
  return {
    ...commonView(context, isTaskSessionEnded(session), outbox),
    form: 'A',
    generation: backlog.generation,
    pending_task_ids: pendingInOrder(session).map((task) => task.context.task_id),
    last_event_id:
      lastSpan === undefined ? null : formatEventId({ epoch: lastSpan.epoch, generation: backlog.generation, seq: backlog.lastSeq }),
    backlog: windowToArray(backlog.replies).map((r) => ({ id: r.id, task_id: r.task_id })),
    backlog_bytes: backlog.bytes,
    evicted_task_ids: windowToArray(backlog.ledger).map((e) => e.task_id),
    ledger_floor: backlog.ledgerFloor,
    readers: readers.length,
    reader_states: readers,
  };
}

export function conversationView(conversation: ConversationSnapshot, outbox: Outbox): ConversationView {
  const { context } = conversation;
  return {
    ...commonView(context, isConversationEnded(conversation), outbox),
    form: 'B',
    callback_url: context.callback?.url ?? null,
    running_task_ids: [...context.running],
  };
}
