/**
 * Group commit: appends join one batch, committed in one transaction. The batch commits at the end of the
 * event-loop turn (`setImmediate`, right after that turn's I/O callbacks), so under load one commit
 * carries many events. An urgent append (one a client waits on) commits sooner, as soon as the microtasks
 * already queued have run, while the turn has made fewer than `EARLY_COMMITS_PER_TURN` early commits: a
 * lone request, and its agent's immediate answer, pay for no wait at all, yet a busy turn still ends in
 * one batch. Listeners see each batch after it is durable, never before.
 */
import { EventLogClosedError, EventLogWriteError } from './errors.js';

/** A request and its agent's immediate answer: the two commits a lone turn needs. */
export const EARLY_COMMITS_PER_TURN = 2;

export class GroupCommit<E> {
  private batch: E[] = [];
  private batchDone: Promise<void> | undefined;
  private settleBatch: { resolve: () => void; reject: (error: unknown) => void } | undefined;
  private turnEndScheduled = false;
  private earlyCommitQueued = false;
  private earlyCommits = 0;
  private readonly listeners: Array<(events: readonly E[]) => void> = [];
  private failure: EventLogWriteError | undefined;
  private closed = false;

  constructor(
    /** Writes the batch in one transaction; throws if it cannot. */
    private readonly commit: (events: readonly E[]) => void,
    /** Whether someone waits on the event's commit; others wait for the turn's end. */
    private readonly urgent: (event: E) => boolean,
  ) {}

  /** Events appended but not yet committed. */
  get pending(): number {
    return this.batch.length;
  }

  /** The events appended but not yet committed, oldest first. */
  get uncommitted(): readonly E[] {
    return this.batch;
  }

  /** Queues an event for the current batch; resolves once the batch is committed. */
  append(event: E): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(new EventLogClosedError());
    this.batch.push(event);
    this.batchDone ??= new Promise<void>((resolve, reject) => {
      this.settleBatch = { resolve, reject };
    });
    if (!this.turnEndScheduled) {
      this.turnEndScheduled = true;
      setImmediate(() => this.endTurn());
    }
    if (!this.earlyCommitQueued && this.earlyCommits < EARLY_COMMITS_PER_TURN && this.urgent(event)) {
      this.earlyCommitQueued = true;
      this.earlyCommits += 1;
      queueMicrotask(() => {
        this.earlyCommitQueued = false;
        this.flush();
      });
    }
    return this.batchDone;
  }

  /** Resolves when nothing appended so far is still uncommitted. */
  async settled(): Promise<void> {
    while (this.batchDone !== undefined) await this.batchDone;
  }

  /** Called with each committed batch, in order, before any `append` promise of that batch resolves. */
  onCommit(listener: (events: readonly E[]) => void): void {
    this.listeners.push(listener);
  }

  /** Commits what is pending; nothing is appended after. */
  async close(): Promise<void> {
    await this.settled().catch(() => {});
    this.closed = true;
  }

  private endTurn(): void {
    this.turnEndScheduled = false;
    this.earlyCommits = 0;
    this.flush();
  }

  private flush(): void {
    if (this.batch.length === 0) return;
    const events = this.batch;
    const settle = this.settleBatch!;
    this.batch = [];
    this.batchDone = undefined;
    this.settleBatch = undefined;
    try {
      this.commit(events);
    } catch (error) {
      // Memory already folded these events; the only consistent way on is a restart from the log.
      this.failure = new EventLogWriteError(error);
      settle.reject(this.failure);
      return;
    }
    try {
      for (const listener of this.listeners) listener(events);
    } finally {
      settle.resolve();
    }
  }
}
