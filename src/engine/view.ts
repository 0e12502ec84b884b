/** A read-only, JSON-ready picture of one session for the embedding API and the inspection route. */
import { formatEventId } from '../protocol/index.js';
import { isEnded, pendingInOrder, type SessionSnapshot } from '../machines/session.js';
import { newest, windowToArray } from '../machines/window.js';

export interface SessionView {
  readonly session_id: string;
  readonly state: 'open' | 'ended';
  readonly generation: string;
  readonly opened_at: number;
  readonly last_activity_at: number;
  readonly ended_at: number | null;
  readonly end_reason: string | null;
  readonly pending_task_ids: readonly string[];
  /** Id of the newest terminal reply, or null before the first. */
  readonly last_event_id: string | null;
  readonly backlog: readonly { readonly id: string; readonly task_id: string }[];
  readonly backlog_bytes: number;
  readonly evicted_task_ids: readonly string[];
  /** Cursors at or below this seq can no longer be reconciled exactly. */
  readonly ledger_floor: number;
  readonly readers: number;
}

export function sessionView(session: SessionSnapshot, readers: number): SessionView {
  const { context } = session;
  const { backlog } = context;
  const lastSpan = newest(backlog.spans);
  return {
    session_id: context.session_id,
    state: isEnded(session) ? 'ended' : 'open',
    generation: backlog.generation,
    opened_at: context.openedAt,
    last_activity_at: context.lastActivityAt,
    ended_at: context.endedAt ?? null,
    end_reason: context.endReason ?? null,
    pending_task_ids: pendingInOrder(session).map((task) => task.context.task_id),
    last_event_id:
      lastSpan === undefined ? null : formatEventId({ epoch: lastSpan.epoch, generation: backlog.generation, seq: backlog.lastSeq }),
    backlog: windowToArray(backlog.replies).map((r) => ({ id: r.id, task_id: r.task_id })),
    backlog_bytes: backlog.bytes,
    evicted_task_ids: windowToArray(backlog.ledger).map((e) => e.task_id),
    ledger_floor: backlog.ledgerFloor,
    readers,
  };
}
