/**
 * The stream readers (4.2): every `GET /v1/events` connection, by session, each run by its subscription
 * actor. A new reader's replay is computed from committed state only, in the same synchronous step that
 * registers it, so each reply reaches it exactly once: from the replay if it was committed before, as a
 * live frame if after. Once a batch commits, each reader gets that batch's frames for its session in one
 * push (one step of its statechart, one socket write).
 */
import {
  formatEventId,
  progressFrame,
  replyBytes,
  resyncFrame,
  terminalFrame,
  type EventId,
  type ResyncFrame,
} from '../../protocol/index.js';
import { resume } from '../../machines/chat/backlog.js';
import { isHostEvent, type DomainEvent } from '../../machines/chat/events.js';
import { isTaskSessionEnded, type TaskSessionSnapshot } from '../../machines/chat/task-session.js';
import type { Frame } from '../../machines/core/subscription.js';
import type { AfterCommitHandler } from '../core/after-commit.js';
import type { Clock } from '../core/clock.js';
import type { ChatProjection } from './projection.js';
import type { ReaderView } from '../core/subscription-actor.js';
import { SubscriptionActor, type SubscriberTransport } from '../core/subscription-actor.js';

export type SubscribeResult =
  | { readonly kind: 'subscribed'; readonly actor: SubscriptionActor }
  | { readonly kind: 'too_many_readers' }
  /** The session ended and there is nothing after the cursor: the client should stop reconnecting. */
  | { readonly kind: 'ended' }
  /** A Form B conversation (or, on a Form B host, a session not yet seen): its replies go to its callback. */
  | { readonly kind: 'no_stream' };

export interface ReaderSettings {
  readonly clock: Clock;
  readonly keepaliveMs: number;
  readonly maxReaders: number;
  readonly readerMaxQueuedBytes: number;
}

export class Readers implements AfterCommitHandler<DomainEvent> {
  readonly name = 'readers';
  private readonly bySession = new Map<string, Set<SubscriptionActor>>();
  /** This batch's frames, by session; pushed at the batch's end. */
  private readonly batch = new Map<string, Frame[]>();

  constructor(
    private readonly projection: ChatProjection,
    private readonly settings: ReaderSettings,
    /** The session as its committed events leave it, before any end: folded from the log. */
    private readonly fromLog: (sessionId: string) => TaskSessionSnapshot | undefined,
  ) {}

  /** Live readers of every session. */
  get count(): number {
    let count = 0;
    for (const readers of this.bySession.values()) count += readers.size;
    return count;
  }

  /** Live readers of a session, as each one's subscription stands. */
  views(sessionId: string): ReaderView[] {
    return [...(this.bySession.get(sessionId) ?? [])].map((actor) => actor.view);
  }

  /**
   * Opens a reader: `: open`, the replay after the cursor and the reconciliation frame, then live frames.
   * The replay holds only what is committed: `uncommitted` are the events folded but not yet committed;
   * while a reply of this session is among them, memory runs ahead of the log (that reply may even have
   * evicted a committed one), so the replay is folded from the log instead; the reply itself comes as a
   * live frame once committed. An end among them is not an end yet. `connect` is called only once the
   * reader is accepted, to start the response.
   */
  subscribe(
    sessionId: string,
    cursor: EventId | undefined,
    uncommitted: readonly DomainEvent[],
    closing: boolean,
    connect: () => SubscriberTransport,
  ): SubscribeResult {
    const readers = this.bySession.get(sessionId) ?? new Set<SubscriptionActor>();
    if (readers.size >= this.settings.maxReaders) return { kind: 'too_many_readers' };
    let replyPending = false;
    let endPending = false;
    for (const event of uncommitted) {
      if (isHostEvent(event) || event.session_id !== sessionId) continue;
      if (event.type === 'task.settled' && event.seq !== undefined) replyPending = true;
      if (event.type === 'session.ended') endPending = true;
    }
    const current = this.projection.taskSession(sessionId);
    // An ended session keeps no replies in memory; either way the log is read only when there is a cursor to resume.
    const session =
      current !== undefined && cursor !== undefined && (replyPending || isTaskSessionEnded(current)) ? this.fromLog(sessionId) : current;
    const plan = resume(session?.context.backlog, cursor);
    const { replay } = plan;
    const ended = closing || (this.projection.isEnded(sessionId) && !endPending);
    if (ended && replay.length === 0 && (plan.resync === undefined || plan.resync.missed_task_ids.length === 0)) {
      return { kind: 'ended' };
    }
    let text = '';
    for (const reply of replay) text += terminalFrame(reply.id, reply.data);
    if (plan.resync !== undefined) {
      const frame: ResyncFrame = {
        type: 'resync',
        session_id: sessionId,
        ...plan.resync,
        missed_task_ids: [...plan.resync.missed_task_ids],
      };
      text += resyncFrame(JSON.stringify(frame));
    }
    const { clock, keepaliveMs, readerMaxQueuedBytes } = this.settings;
    const actor = new SubscriptionActor(connect(), clock, { keepaliveMs, maxQueuedBytes: readerMaxQueuedBytes }, (closed) => {
      readers.delete(closed);
      if (readers.size === 0 && this.bySession.get(sessionId) === readers) this.bySession.delete(sessionId);
    });
    readers.add(actor);
    this.bySession.set(sessionId, readers);
    actor.open(text);
    if (ended) actor.close(closing ? 'host_closing' : 'session_ended');
    return { kind: 'subscribed', actor };
  }

  event(event: DomainEvent): void {
    switch (event.type) {
      case 'task.progressed': {
        if (event.delivery !== undefined) return;
        const data = JSON.stringify(event.reply);
        this.queue(event.session_id, { kind: 'progress', subject: event.task_id, text: progressFrame(data), bytes: replyBytes(data) });
        return;
      }
      case 'task.settled': {
        if (event.delivery !== undefined) return;
        const generation = this.projection.taskSession(event.session_id)!.context.backlog.generation;
        const id = formatEventId({ epoch: event.epoch, generation, seq: event.seq });
        this.queue(event.session_id, {
          kind: 'terminal',
          subject: event.task_id,
          text: terminalFrame(id, event.data),
          bytes: replyBytes(event.data),
        });
        return;
      }
      case 'session.ended':
        // What the session said before it ended goes out before its streams close.
        this.push(event.session_id, this.batch.get(event.session_id) ?? []);
        this.batch.delete(event.session_id);
        this.closeSession(event.session_id, 'session_ended');
        return;
      default:
        return;
    }
  }

  batchEnd(): void {
    for (const [sessionId, frames] of this.batch) this.push(sessionId, frames);
    this.batch.clear();
  }

  /** Closes every reader (the host is closing): each resumes from its cursor elsewhere or later. */
  closeAll(): void {
    for (const sessionId of [...this.bySession.keys()]) this.closeSession(sessionId, 'host_closing');
  }

  private closeSession(sessionId: string, reason: 'session_ended' | 'host_closing'): void {
    for (const actor of [...(this.bySession.get(sessionId) ?? [])]) actor.close(reason);
  }

  private queue(sessionId: string, frame: Frame): void {
    if (!this.bySession.has(sessionId)) return;
    const frames = this.batch.get(sessionId);
    if (frames === undefined) this.batch.set(sessionId, [frame]);
    else frames.push(frame);
  }

  private push(sessionId: string, frames: readonly Frame[]): void {
    const readers = this.bySession.get(sessionId);
    if (readers === undefined || frames.length === 0) return;
    for (const actor of [...readers]) actor.push(frames);
  }
}
