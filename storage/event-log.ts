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
 * One process at a time (`log-lock.ts`), and only its owner may read it: the log holds callback tokens,
 * so it is created 0600 in folders created 0700 (`private-files.ts`), and a log that others can access
 * is refused. Every error of ours has a stable code: the list is in `errors.ts`.
 *
 * Generic over the event type: storage knows rows, not lifecycles.
 */
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { dirname } from 'node:path';
import {
  EventLogClosedError,
  EventLogPermissionsError,
  EventLogWriteError,
  SchemaMismatchError,
} from './errors.js';
import { LogLock } from './log-lock.js';
import { createPrivateFile, exposure, makePrivateFolder } from './private-files.js';

/** Our files say who they are (`PRAGMA application_id`, "ARLY") and which layout they have. */
export const APPLICATION_ID = 0x41524c59;
export const SCHEMA_VERSION = 1;
const APPEND_ONLY_DELETE = `CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
  BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END`;

/**
 * Which events each stream (a session, a job) has: the positions of each stream, indexed a few thousand
 * events behind the log, up to `indexed_to`, so that an append writes no index page. An index on
 * `events (stream, position)` kept with every commit made each commit dirty a page per stream it carried
 * (a busy host's commit carries dozens), three quarters of its cost; here each stream's page is written
 * once a few thousand events. The events after `indexed_to` are a short tail a reader scans.
 */
const STREAM_POSITIONS_TABLES = `
  CREATE TABLE IF NOT EXISTS stream_positions (
    stream TEXT NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (stream, position)
  ) WITHOUT ROWID, STRICT;
  CREATE TABLE IF NOT EXISTS stream_positions_to (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    position INTEGER NOT NULL
  ) STRICT;
  INSERT OR IGNORE INTO stream_positions_to (one, position) VALUES (1, 0);`;

/** Events the stream index may lag the log by before a commit brings it up to date. */
export const STREAM_INDEX_LAG = 4_096;

/** Where the stream index is up to in a log; 0 for a log that has none yet (made before it). */
export function streamIndexedTo(db: Database.Database): number {
  const exists = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'stream_positions_to'").get();
  if (exists === undefined) return 0;
  return (db.prepare('SELECT position FROM stream_positions_to WHERE one = 1').pluck().get() as number | undefined) ?? 0;
}

const SNAPSHOTS_TABLE = `CREATE TABLE IF NOT EXISTS snapshots (
  position INTEGER PRIMARY KEY,
  at INTEGER NOT NULL,
  event_digest TEXT NOT NULL,
  digest TEXT NOT NULL,
  data TEXT NOT NULL
) STRICT`;

/**
 * The snapshots of a log (open read-write or read-only), newest first, each judged against its digests.
 * A snapshot's text is read, and judged, only when asked for: a start uses the newest good one, and each
 * may be tens of megabytes.
 */
export function readSnapshots(db: Database.Database): StoredSnapshot[] {
  const exists = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'snapshots'").get();
  if (exists === undefined) return [];
  const rows = db
    .prepare('SELECT s.position, s.at, s.event_digest, s.digest, e.data AS event FROM snapshots s LEFT JOIN events e ON e.position = s.position ORDER BY s.position DESC')
    .all() as Array<{ position: number; at: number; event_digest: string; digest: string; event: string | null }>;
  const text = db.prepare('SELECT data FROM snapshots WHERE position = ?').pluck();
  return rows.map((row) => {
    let data: string | undefined;
    const read = () => (data ??= text.get(row.position) as string);
    return {
      position: row.position,
      at: row.at,
      get data() {
        return read();
      },
      get problem() {
        if (row.event === null) return `the event at position ${row.position} it was taken after is gone`;
        if (sha256(row.event) !== row.event_digest) return `the event at position ${row.position} is not the one it was taken after`;
        return sha256(read()) !== row.digest ? 'its text is not what was written' : undefined;
      },
    };
  });
}

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

/**
 * A stored snapshot of the folded state as of `position`, with what was found wrong with it, if anything:
 * its text is not what was written (`digest`), or the event at its position is not the one it was taken
 * after (the log was swapped or restored under it).
 */
export interface StoredSnapshot {
  readonly position: number;
  readonly at: number;
  readonly data: string;
  readonly problem: string | undefined;
}

/** Snapshots kept: the newest, and the one before it in case the newest is found bad. */
export const KEPT_SNAPSHOTS = 2;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export interface EventLogOptions<E> {
  /** A file path (its missing folders are created), or ':memory:'. */
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

export class EventLog<E extends LogRecord> {
  readonly path: string;
  private readonly db: Database.Database;
  private readonly lock: LogLock | undefined;
  private readonly insert: Database.Statement<[string, string, number, string]>;
  private readonly streamOf: (event: E) => string;
  private readonly urgent: (event: E) => boolean;
  private readonly commitBatch: (events: readonly E[]) => void;
  /** Brings the stream index up to the newest event (within a transaction, or as one). */
  private readonly indexTail: () => void;
  private indexedTo = 0;
  private batch: E[] = [];
  private batchDone: Promise<void> | undefined;
  private settleBatch: { resolve: () => void; reject: (error: unknown) => void } | undefined;
  private turnEndScheduled = false;
  private earlyCommitQueued = false;
  private earlyCommits = 0;
  private readonly listeners: Array<(events: readonly E[]) => void> = [];
  private failure: EventLogWriteError | undefined;
  private closed = false;
  /** The position of the newest committed event (0 for none). */
  private last = 0;

  private constructor(options: EventLogOptions<E>) {
    this.path = options.path;
    this.streamOf = options.streamOf;
    this.urgent = options.urgent ?? (() => true);
    if (options.path !== ':memory:') {
      makePrivateFolder(dirname(options.path));
      this.lock = LogLock.acquire(options.path);
    }
    try {
      const fresh = this.lock === undefined || this.inspect();
      this.db = new Database(options.path);
      try {
        this.db.pragma('journal_mode = WAL');
        this.db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
        if (fresh) this.createSchema();
        // Snapshots and the stream index came later: added to older logs as they are opened (a new
        // table changes no row, so the schema version stays).
        this.db.exec(SNAPSHOTS_TABLE);
        this.db.exec(STREAM_POSITIONS_TABLES);
        // The index on every commit that logs made before had: its work moves to the lagging index.
        this.db.exec('DROP INDEX IF EXISTS events_by_stream');
      } catch (error) {
        this.db.close();
        throw error;
      }
    } catch (error) {
      this.lock?.release();
      throw error;
    }
    this.insert = this.db.prepare('INSERT INTO events (stream, type, at, data) VALUES (?, ?, ?, ?)');
    const indexTail = this.db.prepare('INSERT OR IGNORE INTO stream_positions (stream, position) SELECT stream, position FROM events WHERE position > ? ORDER BY stream, position');
    const indexedTo = this.db.prepare('UPDATE stream_positions_to SET position = ? WHERE one = 1');
    this.indexTail = () => {
      indexTail.run(this.indexedTo);
      indexedTo.run(this.last);
      this.indexedTo = this.last;
    };
    this.commitBatch = this.db.transaction((events: readonly E[]) => {
      for (const e of events) this.last = Number(this.insert.run(this.streamOf(e), e.type, e.at, JSON.stringify(e)).lastInsertRowid);
      if (this.last - this.indexedTo >= STREAM_INDEX_LAG) this.indexTail();
    });
    this.last = (this.db.prepare('SELECT coalesce(max(position), 0) AS last FROM events').get() as { last: number }).last;
    this.indexedTo = streamIndexedTo(this.db);
    // A log made before the stream index gets it now, once, rather than in the middle of a commit.
    if (this.last - this.indexedTo >= STREAM_INDEX_LAG) this.indexed();
  }

  static open<E extends LogRecord>(options: EventLogOptions<E>): EventLog<E> {
    return new EventLog<E>(options);
  }

  /**
   * Creates the file if it is absent, then judges it before anything is written to it: true for an
   * empty file, which becomes ours; throws for a file that is not a log of ours (or of another
   * version), then for a log that others can access. The reading connection is read-only because one
   * that may write checkpoints the -wal into the log and removes it on close: a refused log must be
   * left as it was.
   */
  private inspect(): boolean {
    createPrivateFile(this.path);
    const db = new Database(this.path, { readonly: true, fileMustExist: true });
    let applicationId: number, version: number, tables: number;
    try {
      applicationId = db.pragma('application_id', { simple: true }) as number;
      version = db.pragma('user_version', { simple: true }) as number;
      tables = (db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table'").get() as { n: number }).n;
    } catch (error) {
      if (error instanceof Database.SqliteError && error.code === 'SQLITE_NOTADB') throw this.notOurs();
      throw error;
    } finally {
      db.close();
    }
    const fresh = applicationId === 0 && version === 0 && tables === 0;
    if (!fresh && applicationId !== APPLICATION_ID) throw this.notOurs();
    if (!fresh && version !== SCHEMA_VERSION) {
      throw new SchemaMismatchError(
        `${this.path} has event log schema version ${version}; this build reads version ${SCHEMA_VERSION}`,
      );
    }
    // Judged after the read, which may have created a -wal and -shm (with the log's own mode): the advice names every file there is.
    const exposed = exposure([this.path, `${this.path}-wal`, `${this.path}-shm`]);
    if (exposed !== undefined) throw new EventLogPermissionsError(`the event log holds callback tokens and is not private: ${exposed}`);
    return fresh;
  }

  private notOurs(): SchemaMismatchError {
    return new SchemaMismatchError(`${this.path} is not an assistant-relay event log`);
  }

  private createSchema(): void {
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
      ${APPEND_ONLY_DELETE};
      PRAGMA application_id = ${APPLICATION_ID};
      PRAGMA user_version = ${SCHEMA_VERSION};
      COMMIT;
    `);
  }

  /** Every stored event after `position` (default: all of them), oldest first. */
  *read(after = 0): IterableIterator<StoredEvent<E>> {
    const rows = this.db.prepare('SELECT position, data FROM events WHERE position > ? ORDER BY position').iterate(after) as IterableIterator<{
      position: number;
      data: string;
    }>;
    for (const row of rows) yield { position: row.position, event: JSON.parse(row.data) as E };
  }

  /** Brings the stream index up to date before a question about one stream (rare: a reconnect after an end, retention). */
  private indexed(): void {
    if (this.last > this.indexedTo) this.db.transaction(this.indexTail)();
  }

  /** The position of the newest committed event of `stream`; 0 if it has none. */
  lastPositionOf(stream: string): number {
    this.indexed();
    return (this.db.prepare('SELECT coalesce(max(position), 0) AS last FROM stream_positions WHERE stream = ?').get(stream) as { last: number }).last;
  }

  /** The position of the newest committed event; 0 for an empty log. */
  get lastPosition(): number {
    return this.last;
  }

  /**
   * Stores a snapshot of the folded state as of `position` (a committed event's), with the digests that
   * let a start judge it, and keeps only the newest `KEPT_SNAPSHOTS`.
   */
  writeSnapshot(position: number, data: string, at: number): void {
    if (this.closed) throw new EventLogClosedError();
    const row = this.db.prepare('SELECT data FROM events WHERE position = ?').get(position) as { data: string } | undefined;
    if (row === undefined) throw new RangeError(`no event at position ${position} to snapshot after`);
    this.db.transaction(() => {
      this.db.prepare('INSERT OR REPLACE INTO snapshots (position, at, event_digest, digest, data) VALUES (?, ?, ?, ?, ?)').run(position, at, sha256(row.data), sha256(data), data);
      this.db.prepare('DELETE FROM snapshots WHERE position NOT IN (SELECT position FROM snapshots ORDER BY position DESC LIMIT ?)').run(KEPT_SNAPSHOTS);
    })();
  }

  /**
   * Removes the events of `streams` (sessions, jobs: aggregates the fold has forgotten) stored before
   * `position`: retention's one exception to append-only, in one transaction that lifts the guard on
   * deletes and puts it back. Never the newest event, so no position is used twice. Returns how many went.
   */
  removeStreams(streams: readonly string[], position: number): number {
    if (this.closed) throw new EventLogClosedError();
    if (position > this.last) throw new RangeError(`position ${position} is past the newest event (${this.last})`);
    this.indexed();
    const remove = this.db.prepare('DELETE FROM events WHERE position IN (SELECT position FROM stream_positions WHERE stream = ? AND position < ?)');
    const unindex = this.db.prepare('DELETE FROM stream_positions WHERE stream = ? AND position < ?');
    return this.db.transaction(() => {
      this.db.exec('DROP TRIGGER events_append_only_delete');
      let removed = 0;
      for (const stream of streams) {
        if (stream === '') continue;
        removed += remove.run(stream, position).changes;
        unindex.run(stream, position);
      }
      this.db.exec(APPEND_ONLY_DELETE);
      // A snapshot taken after an event now gone could no longer be judged: it goes too.
      this.db.exec('DELETE FROM snapshots WHERE position NOT IN (SELECT position FROM events)');
      return removed;
    })();
  }

  /** The stored snapshots, newest first, each with what is wrong with it (if anything). */
  snapshots(): StoredSnapshot[] {
    return readSnapshots(this.db);
  }

  /** The stored events of one stream (one session), oldest first. */
  *readStream(stream: string): IterableIterator<StoredEvent<E>> {
    this.indexed();
    const rows = this.db.prepare('SELECT e.position, e.data FROM stream_positions s JOIN events e ON e.position = s.position WHERE s.stream = ? ORDER BY s.position').iterate(stream) as IterableIterator<{
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

  /** Commits what is pending and closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.settled().catch(() => {});
    this.closed = true;
    this.db.close();
    this.lock?.release();
  }
}
