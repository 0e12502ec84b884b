/**
 * The append-only event log: one SQLite table, WAL, the only source of truth. Listeners see each batch
 * after it is durable, never before.
 *
 * Group commit: appends join one batch, committed in one transaction. The batch commits at the end of
 * the event-loop turn (`setImmediate`, right after that turn's I/O callbacks), so under load one
 * commit carries many events. An urgent append (one a client waits on) commits sooner, as soon as the
 * microtasks already queued have run, while the turn has made fewer than `EARLY_COMMITS_PER_TURN`
 * early commits: a lone request, and its agent's immediate answer, pay for no wait at all, yet a busy
 * turn still ends in one batch.
 *
 * Generic over the event type: storage knows rows, not lifecycles.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/** Our files say who they are (`PRAGMA application_id`, "ARLY") and which layout they have. */
const APPLICATION_ID = 0x41524c59;
export const SCHEMA_VERSION = 1;
/** A request and its agent's immediate answer: the two commits a lone turn needs. */
export const EARLY_COMMITS_PER_TURN = 2;

export interface LogRecord {
  readonly type: string;
  readonly at: number;
}

export interface StoredEvent<E> {
  readonly position: number;
  readonly event: E;
}

export interface EventLogOptions<E> {
  /** A file path (its folder is created), or ':memory:'. */
  readonly path: string;
  /** Which aggregate an event belongs to ('' for none): the `stream` column, for reading one aggregate's history. */
  readonly streamOf: (event: E) => string;
  /** Whether someone waits on the event's commit (default: every event); others wait for the turn's end. */
  readonly urgent?: (event: E) => boolean;
  /**
   * `normal` (default): a commit survives a crash of this process (SIGKILL included); after a power loss
   * the last commits may be lost, never corrupted. `full`: fsync on every commit, surviving power loss.
   */
  readonly synchronous?: 'normal' | 'full';
}

export class SchemaMismatchError extends Error {
  override readonly name = 'SchemaMismatchError';
}

export class EventLog<E extends LogRecord> {
  readonly path: string;
  private readonly db: Database.Database;
  private readonly insert: Database.Statement<[string, string, number, string]>;
  private readonly streamOf: (event: E) => string;
  private readonly urgent: (event: E) => boolean;
  private readonly commitBatch: (events: readonly E[]) => void;
  private batch: E[] = [];
  private batchDone: Promise<void> | undefined;
  private settleBatch: { resolve: () => void; reject: (error: unknown) => void } | undefined;
  private turnEndScheduled = false;
  private earlyCommitQueued = false;
  private earlyCommits = 0;
  private readonly listeners: Array<(events: readonly E[]) => void> = [];
  private failure: unknown;
  private closed = false;

  private constructor(options: EventLogOptions<E>) {
    this.path = options.path;
    this.streamOf = options.streamOf;
    this.urgent = options.urgent ?? (() => true);
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true });
    this.db = new Database(options.path);
    try {
      this.db.pragma('journal_mode = WAL');
      this.db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      this.prepareSchema();
    } catch (error) {
      this.db.close();
      throw error;
    }
    this.insert = this.db.prepare('INSERT INTO events (stream, type, at, data) VALUES (?, ?, ?, ?)');
    this.commitBatch = this.db.transaction((events: readonly E[]) => {
      for (const e of events) this.insert.run(this.streamOf(e), e.type, e.at, JSON.stringify(e));
    });
  }

  static open<E extends LogRecord>(options: EventLogOptions<E>): EventLog<E> {
    return new EventLog<E>(options);
  }

  private prepareSchema(): void {
    const applicationId = this.db.pragma('application_id', { simple: true }) as number;
    const version = this.db.pragma('user_version', { simple: true }) as number;
    const tables = this.db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table'").get() as { n: number };
    if (applicationId === 0 && version === 0 && tables.n === 0) {
      // One transaction: a crash half way must not leave a file that is neither empty nor ours.
      this.db.exec(`
        BEGIN;
        CREATE TABLE events (
          position INTEGER PRIMARY KEY,
          stream TEXT NOT NULL,
          type TEXT NOT NULL,
          at INTEGER NOT NULL,
          data TEXT NOT NULL
        ) STRICT;
        CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
          BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
        CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
          BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
        PRAGMA application_id = ${APPLICATION_ID};
        PRAGMA user_version = ${SCHEMA_VERSION};
        COMMIT;
      `);
      return;
    }
    if (applicationId !== APPLICATION_ID) {
      throw new SchemaMismatchError(`${this.path} is not an assistant-relay event log`);
    }
    if (version !== SCHEMA_VERSION) {
      throw new SchemaMismatchError(
        `${this.path} has event log schema version ${version}; this build reads version ${SCHEMA_VERSION}`,
      );
    }
  }

  /** Every stored event, oldest first. */
  *read(): IterableIterator<StoredEvent<E>> {
    const rows = this.db.prepare('SELECT position, data FROM events ORDER BY position').iterate() as IterableIterator<{
      position: number;
      data: string;
    }>;
    for (const row of rows) yield { position: row.position, event: JSON.parse(row.data) as E };
  }

  /** The stored events of one stream (one session), oldest first. */
  *readStream(stream: string): IterableIterator<StoredEvent<E>> {
    const rows = this.db.prepare('SELECT position, data FROM events WHERE stream = ? ORDER BY position').iterate(stream) as IterableIterator<{
      position: number;
      data: string;
    }>;
    for (const row of rows) yield { position: row.position, event: JSON.parse(row.data) as E };
  }

  count(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
  }

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
    if (this.closed) return Promise.reject(new Error('the event log is closed'));
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
      this.commitBatch(events);
    } catch (error) {
      // Memory already folded these events; the only consistent way on is a restart from the log.
      this.failure = error;
      settle.reject(error);
      return;
    }
    try {
      for (const listener of this.listeners) listener(events);
    } finally {
      settle.resolve();
    }
  }

  /** Commits what is pending and closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.settled().catch(() => {});
    this.closed = true;
    this.db.close();
  }
}
