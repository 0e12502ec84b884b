/**
 * A session's retained backlog (2.6, 2.7, 8): terminal replies with their ids, evicted oldest-first past
 * the retention bounds into a bounded ledger of evicted task ids; and how a `Last-Event-ID` resumes it.
 * Pure values: every function returns a new backlog.
 */
import type { EventId } from '../../protocol/index.js';
import { dropOldest, emptyWindow, iterate, newest, oldest, push, windowSize, windowToArray, type Window } from '../core/window.js';

export interface RetainedReply {
  readonly seq: number;
  readonly id: string;
  readonly task_id: string;
  /** Compact JSON of the reply body, as framed on the stream. */
  readonly data: string;
  readonly bytes: number;
}

export interface EvictedTask {
  readonly seq: number;
  readonly task_id: string;
}

/** From `firstSeq` on (until the next span), ids were issued in `epoch`. */
export interface EpochSpan {
  readonly epoch: string;
  readonly firstSeq: number;
}

export interface BacklogLimits {
  readonly maxReplies: number;
  readonly maxBytes: number;
  readonly ledgerMaxTasks: number;
  readonly maxSpans: number;
}

export interface Backlog {
  readonly generation: string;
  readonly lastSeq: number;
  /** Oldest first. */
  readonly replies: Window<RetainedReply>;
  readonly bytes: number;
  /** Oldest first; what eviction pushed out of `replies`. */
  readonly ledger: Window<EvictedTask>;
  /** Evicted replies with seq <= floor are no longer in the ledger: a cursor below it cannot be reconciled exactly. */
  readonly ledgerFloor: number;
  /** Oldest first; the epochs in which this session's ids were issued. */
  readonly spans: Window<EpochSpan>;
  /** Seqs <= this can no longer be tied to an epoch, so cursors naming them are not recognised. */
  readonly spansFloor: number;
}

export function emptyBacklog(generation: string): Backlog {
  return {
    generation,
    lastSeq: 0,
    replies: emptyWindow(),
    bytes: 0,
    ledger: emptyWindow(),
    ledgerFloor: 0,
    spans: emptyWindow(),
    spansFloor: 0,
  };
}

function remember(ledger: Window<EvictedTask>, floor: number, evicted: RetainedReply, max: number) {
  const forgotten = windowSize(ledger) === max ? oldest(ledger) : undefined;
  return {
    ledger: push(ledger, { seq: evicted.seq, task_id: evicted.task_id }, max),
    ledgerFloor: forgotten === undefined ? floor : forgotten.seq,
  };
}

/** Appends the next terminal reply (its seq must be lastSeq + 1) and evicts past the bounds. */
export function retain(backlog: Backlog, epoch: string, reply: RetainedReply, retention: BacklogLimits): Backlog {
  if (reply.seq !== backlog.lastSeq + 1) {
    throw new Error(`backlog seq ${reply.seq} does not follow ${backlog.lastSeq}`);
  }
  let { spans, spansFloor, ledger, ledgerFloor, replies, bytes } = backlog;
  if (newest(spans)?.epoch !== epoch) {
    const dropped = windowSize(spans) === retention.maxSpans;
    spans = push(spans, { epoch, firstSeq: reply.seq }, retention.maxSpans);
    if (dropped) spansFloor = oldest(spans)!.firstSeq - 1;
  }
  // The newest reply always stays: a single reply is at most 256 KiB, well under any byte bound.
  replies = push(replies, reply, Number.MAX_SAFE_INTEGER);
  bytes += reply.bytes;
  while (windowSize(replies) > 1 && (windowSize(replies) > retention.maxReplies || bytes > retention.maxBytes)) {
    const evicted = oldest(replies)!;
    replies = dropOldest(replies, 1);
    bytes -= evicted.bytes;
    ({ ledger, ledgerFloor } = remember(ledger, ledgerFloor, evicted, retention.ledgerMaxTasks));
  }
  return { generation: backlog.generation, lastSeq: reply.seq, replies, bytes, ledger, ledgerFloor, spans, spansFloor };
}

/**
 * What an ended session keeps in memory of its backlog: the ids it issued (generation, last seq, epoch
 * spans), not the replies. A reconnect after the end replays from the log itself (engine/readers.ts).
 */
export function compactBacklog(backlog: Backlog): Backlog {
  return { ...backlog, replies: emptyWindow(), bytes: 0, ledger: emptyWindow() };
}

/** Whether this session issued `cursor`: same generation, a seq it reached, in the epoch it was issued in. */
export function issuedCursor(backlog: Backlog, cursor: EventId): boolean {
  if (cursor.generation !== backlog.generation) return false;
  if (cursor.seq > backlog.lastSeq || cursor.seq <= backlog.spansFloor) return false;
  let epoch: string | undefined;
  for (const span of iterate(backlog.spans)) {
    if (span.firstSeq > cursor.seq) break;
    epoch = span.epoch;
  }
  return epoch === cursor.epoch;
}

export interface Reconciliation {
  readonly missed_task_ids: readonly string[];
  readonly recovery_complete: boolean;
}

export interface ResumePlan {
  readonly replay: readonly RetainedReply[];
  /** Absent on a first connection (no cursor): it never gets a reconciliation frame. */
  readonly resync?: Reconciliation;
}

/**
 * What a reconnect gets (4.2 rule 7): every retained reply after the cursor, then the evicted task ids
 * after it. A cursor this session never issued gets the whole backlog, every ledgered task id, and
 * `recovery_complete: false`, since we cannot know what the client saw.
 */
export function resume(backlog: Backlog | undefined, cursor: EventId | undefined): ResumePlan {
  if (cursor === undefined) return { replay: [] };
  if (backlog === undefined) return { replay: [], resync: { missed_task_ids: [], recovery_complete: false } };
  if (!issuedCursor(backlog, cursor)) {
    return {
      replay: windowToArray(backlog.replies),
      resync: { missed_task_ids: windowToArray(backlog.ledger).map((e) => e.task_id), recovery_complete: false },
    };
  }
  return {
    replay: windowToArray(backlog.replies).filter((r) => r.seq > cursor.seq),
    resync: {
      missed_task_ids: windowToArray(backlog.ledger)
        .filter((e) => e.seq > cursor.seq)
        .map((e) => e.task_id),
      recovery_complete: cursor.seq >= backlog.ledgerFloor,
    },
  };
}
