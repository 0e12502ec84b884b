/**
 * The append-only event log: one SQLite table, WAL, the only source of truth. Appends are committed in
 * groups (group-commit.ts), and listeners see each batch after it is durable, never before. Beside the
 * events: an index of each stream's positions that lags the log (stream-index.ts), and the snapshots of
 * what was folded from it (log-snapshots.ts).
 *
 * One process at a time (`log-lock.ts`), and only its owner may read it: the log holds callback tokens,
 * so it is created 0600 in folders created 0700 (`private-files.ts`), and a log that others can access
 * is refused (log-file.ts). Every error of ours has a stable code: the list is in `errors.ts`.
 *
 * Generic over the event type: storage knows rows, not lifecycles.
 */
import Database from 'better-sqlite3';
import { dirname } from 'node:path';
import { EventLogClosedError } from './errors.js';
import { GroupCommit } from './group-commit.js';
import { APPEND_ONLY_DELETE, createLogSchema, judgeLogFile } from './log-file.js';
import { LogLock } from './log-lock.js';
import { SNAPSHOTS_TABLE, readSnapshots, writeSnapshot, type StoredSnapshot } from './log-snapshots.js';
import { makePrivateFolder } from './private-files.js';
import { STREAM_POSITIONS_TABLES, StreamIndex } from './stream-index.js';

export type { StoredSnapshot } from './log-snapshots.js';

export interface LogRecord {
  readonly type: string;
  readonly at: number;
}

export interface StoredEvent<E> {
  readonly position: number;
  readonly event: E;
}

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

/** At most this many events an INSERT: one statement of many rows costs about a microsecond an event less than one a row. */
const ROWS_A_STATEMENT = 32;

/** The INSERT of each number of rows, prepared once. */
class RowInserts {
  private readonly statements: Database.Statement<Array<string | number>>[] = [];
  constructor(private readonly db: Database.Database) {}

  of(rows: number): Database.Statement<Array<string | number>> {
    return (this.statements[rows] ??= this.db.prepare(
      `INSERT INTO events (stream, type, at, data) VALUES ${Array.from({ length: rows }, () => '(?, ?, ?, ?)').join(', ')}`,
    ));
  }
}

export class EventLog<E extends LogRecord> {
  readonly path: string;
  private readonly db: Database.Database;
  private readonly lock: LogLock | undefined;
  private readonly commits: GroupCommit<E>;
  private readonly index: StreamIndex;
  private closed = false;
  /** The position of the newest committed event (0 for none). */
  private last = 0;

  private constructor(options: EventLogOptions<E>) {
    this.path = options.path;
    if (options.path !== ':memory:') {
      makePrivateFolder(dirname(options.path));
      this.lock = LogLock.acquire(options.path);
    }
    try {
      const fresh = this.lock === undefined || judgeLogFile(this.path);
      this.db = new Database(options.path);
      try {
        this.db.pragma('journal_mode = WAL');
        this.db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
        if (fresh) createLogSchema(this.db);
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
    const inserts = new RowInserts(this.db);
    const { streamOf } = options;
    this.commits = new GroupCommit<E>(
      this.db.transaction((events: readonly E[]) => {
        for (let from = 0; from < events.length; from += ROWS_A_STATEMENT) {
          const to = Math.min(events.length, from + ROWS_A_STATEMENT);
          const values: Array<string | number> = [];
          for (let i = from; i < to; i += 1) {
            const e = events[i]!;
            values.push(streamOf(e), e.type, e.at, JSON.stringify(e));
          }
          this.last = Number(inserts.of(to - from).run(...values).lastInsertRowid);
        }
        this.index.committed(this.last);
      }),
      options.urgent ?? (() => true),
    );
    this.last = (this.db.prepare('SELECT coalesce(max(position), 0) AS last FROM events').get() as { last: number }).last;
    this.index = new StreamIndex(this.db);
    this.index.opened(this.last);
  }

  static open<E extends LogRecord>(options: EventLogOptions<E>): EventLog<E> {
    return new EventLog<E>(options);
  }

  /** Every stored event after `position` (default: all of them), oldest first. */
  *read(after = 0): IterableIterator<StoredEvent<E>> {
    const rows = this.db
      .prepare('SELECT position, data FROM events WHERE position > ? ORDER BY position')
      .iterate(after) as IterableIterator<{
      position: number;
      data: string;
    }>;
    for (const row of rows) yield { position: row.position, event: JSON.parse(row.data) as E };
  }

  /** The position of the newest committed event of `stream`; 0 if it has none. */
  lastPositionOf(stream: string): number {
    this.index.upTo(this.last);
    return (
      this.db.prepare('SELECT coalesce(max(position), 0) AS last FROM stream_positions WHERE stream = ?').get(stream) as { last: number }
    ).last;
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
    writeSnapshot(this.db, position, data, at);
  }

  /**
   * Removes the events of `streams` (sessions, jobs: aggregates the fold has forgotten) stored before
   * `position`: retention's one exception to append-only, in one transaction that lifts the guard on
   * deletes and puts it back. Never the newest event, so no position is used twice. Returns how many went.
   */
  removeStreams(streams: readonly string[], position: number): number {
    if (this.closed) throw new EventLogClosedError();
    if (position > this.last) throw new RangeError(`position ${position} is past the newest event (${this.last})`);
    this.index.upTo(this.last);
    const remove = this.db.prepare(
      'DELETE FROM events WHERE position IN (SELECT position FROM stream_positions WHERE stream = ? AND position < ?)',
    );
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
    this.index.upTo(this.last);
    const rows = this.db
      .prepare(
        'SELECT e.position, e.data FROM stream_positions s JOIN events e ON e.position = s.position WHERE s.stream = ? ORDER BY s.position',
      )
      .iterate(stream) as IterableIterator<{
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
    return this.commits.pending;
  }

  /** The events appended but not yet committed, oldest first. */
  get uncommitted(): readonly E[] {
    return this.commits.uncommitted;
  }

  /** Queues an event for the current batch; resolves once the batch is committed. */
  append(event: E): Promise<void> {
    return this.commits.append(event);
  }

  /** Resolves when nothing appended so far is still uncommitted. */
  settled(): Promise<void> {
    return this.commits.settled();
  }

  /** Called with each committed batch, in order, before any `append` promise of that batch resolves. */
  onCommit(listener: (events: readonly E[]) => void): void {
    this.commits.onCommit(listener);
  }

  /** Commits what is pending and closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.commits.close();
    this.closed = true;
    this.db.close();
    this.lock?.release();
  }
}
