/**
 * Reading an event log from outside the process that writes it (`assistant-relay replay`). Read-only and
 * without the log's lock: in WAL mode a reader never blocks the writer, nor the writer a reader, so this
 * is safe on the log of a running host or backend. Each `read` is one read transaction: it sees the log as
 * it stood when it began, however much is appended meanwhile.
 *
 * Generic over the event type, as the log is: it checks that a row's data is the event its columns say,
 * never what the event means.
 */
import Database from 'better-sqlite3';
import { statSync } from 'node:fs';
import { SchemaMismatchError } from './errors.js';
import type { LogRecord, StoredEvent } from './event-log.js';
import { APPLICATION_ID, LOG_SCHEMA_VERSION } from './log-file.js';
import { readSnapshots, type StoredSnapshot } from './log-snapshots.js';
import { streamIndexedTo } from './stream-index.js';

/** Whose log it is, by its first event: a host's (`serve`), a backend relay's, or an assistant plugin's. */
export type LogKind = 'host' | 'backend' | 'plugin';

/** Where a read stops (the last event it includes), and where it starts after (a snapshot's position). */
export interface ReadBounds {
  readonly afterPosition?: number;
  /** Stop after the event at this position. */
  readonly untilPosition?: number;
  /** Stop before the first event later than this (epoch ms). */
  readonly untilAt?: number;
}

/** The file cannot be opened at all: it is missing, a folder, or not readable. */
export class LogOpenError extends Error {
  override readonly name = 'LogOpenError';
}

/** A row whose data is not the event its columns say. */
export class CorruptEventError extends Error {
  override readonly name = 'CorruptEventError';

  constructor(
    readonly position: number,
    why: string,
  ) {
    super(`event #${position} ${why}`);
  }
}

/** The log within a read's bounds, as one read transaction sees it; use it only inside that `read`. */
export interface LogView {
  /** `undefined` for a log with no events. */
  readonly kind: LogKind | 'unknown' | undefined;
  /** Events within the bounds. */
  readonly count: number;
  /** The position of the last event within the bounds (0: none). */
  readonly end: number;
  /** The events within the bounds, oldest first; with `stream`, only that stream's. */
  events(stream?: string): IterableIterator<StoredEvent<LogRecord>>;
  /** The streams with events within the bounds, in the order of their first event. */
  streams(): IterableIterator<string>;
  /** The last event of a type at or before the end (whatever `afterPosition` says): e.g. the start whose settings a replay folds with. */
  last(type: string): StoredEvent<LogRecord> | undefined;
  /** The snapshots the writing process stored at positions within the bounds, oldest first, each with what is wrong with it. */
  snapshots(): StoredSnapshot[];
}

/** How much of a log's file a reader maps. */
const MMAP_BYTES = 2 ** 30;

/** Rows read from SQLite at a time. */
const PAGE = 1024;

type RawRow = readonly [position: number, type: string, at: number, data: string];

function kindOf(firstType: string | undefined): LogView['kind'] {
  if (firstType === undefined) return undefined;
  if (firstType === 'host.started') return 'host';
  if (firstType === 'backend.started') return 'backend';
  // A plugin's log has no start event: every event is about one of its jobs.
  return firstType.startsWith('plugin.') ? 'plugin' : 'unknown';
}

/** A row's event, checked against its columns; a row read as an array, `[position, type, at, data]`. */
function parse(row: RawRow): StoredEvent<LogRecord> {
  const position = row[0];
  let event: unknown;
  try {
    event = JSON.parse(row[3]);
  } catch (error) {
    throw new CorruptEventError(position, `(${row[1]}) is not JSON: ${(error as Error).message}`);
  }
  const record = event as Partial<LogRecord> | null;
  if (typeof record !== 'object' || record === null || record.type !== row[1] || record.at !== row[2]) {
    throw new CorruptEventError(position, `(${row[1]}) holds data that is not that event: its type or time differs from its row's`);
  }
  return { position, event: record as LogRecord };
}

export class LogReader {
  private constructor(
    readonly path: string,
    private readonly db: Database.Database,
  ) {}

  /** Opens a log to read; a file that is not one of ours (or of another layout) is refused, as EventLog refuses it. */
  static open(path: string): LogReader {
    if (!statSync(path, { throwIfNoEntry: false })?.isFile()) throw new LogOpenError(`${path} is not a file`);
    let db: Database.Database;
    try {
      db = new Database(path, { readonly: true, fileMustExist: true });
    } catch (error) {
      throw new LogOpenError(`cannot open ${path}: ${(error as Error).message}`);
    }
    try {
      LogReader.judge(db, path);
      // Pages read through a memory map rather than a read() call each: a fifth less time per row of a
      // replay. Safe here: a log's file never shrinks under a reader (no auto-vacuum; the WAL is not mapped).
      db.pragma(`mmap_size = ${MMAP_BYTES}`);
    } catch (error) {
      db.close();
      throw error;
    }
    return new LogReader(path, db);
  }

  private static judge(db: Database.Database, path: string): void {
    let applicationId: number, version: number;
    try {
      applicationId = db.pragma('application_id', { simple: true }) as number;
      version = db.pragma('user_version', { simple: true }) as number;
    } catch (error) {
      if (error instanceof Database.SqliteError && error.code === 'SQLITE_NOTADB')
        throw new SchemaMismatchError(`${path} is not an assistant-relay event log`);
      throw error;
    }
    if (applicationId !== APPLICATION_ID) throw new SchemaMismatchError(`${path} is not an assistant-relay event log`);
    if (version !== LOG_SCHEMA_VERSION)
      throw new SchemaMismatchError(`${path} has event log schema version ${version}; this build reads version ${LOG_SCHEMA_VERSION}`);
  }

  /**
   * Runs `read` on the log within `bounds`, in one read transaction: a consistent view while another process
   * appends. `read` may wait (for a slow reader of its output) with the transaction open.
   */
  async read<T>(bounds: ReadBounds, read: (view: LogView) => T | Promise<T>): Promise<T> {
    this.db.exec('BEGIN');
    try {
      return await read(this.view(bounds));
    } finally {
      // It wrote nothing: ending it either way only lets go of its view.
      this.db.exec('ROLLBACK');
    }
  }

  private view(bounds: ReadBounds): LogView {
    const { db } = this;
    const after = bounds.afterPosition ?? 0;
    const last = (db.prepare('SELECT coalesce(max(position), 0) AS p FROM events').get() as { p: number }).p;
    const later =
      bounds.untilAt === undefined
        ? undefined
        : (db.prepare('SELECT min(position) AS p FROM events WHERE at > ?').get(bounds.untilAt) as { p: number | null }).p;
    const end = Math.min(last, bounds.untilPosition ?? last, later === undefined || later === null ? last : later - 1);
    const first = db.prepare('SELECT type FROM events ORDER BY position LIMIT 1').get() as { type: string } | undefined;

    // Rows as arrays, a page at a time: a replay reads every event, and an object per row, or a call into
    // SQLite per row (as `iterate` makes), costs more than its parse.
    const rows = db
      .prepare(`SELECT position, type, at, data FROM events WHERE position > ? AND position <= ? ORDER BY position LIMIT ${PAGE}`)
      .raw();
    // A stream's events: those the stream index has, and the short tail after it (a log made before the index: all a scan).
    const indexedTo = streamIndexedTo(db);
    const streamRows =
      indexedTo === 0
        ? db
            .prepare(
              `SELECT position, type, at, data FROM events WHERE stream = @stream AND position > @after AND position <= @end ORDER BY position LIMIT ${PAGE}`,
            )
            .raw()
        : db
            .prepare(
              `SELECT position, type, at, data FROM events WHERE position IN (SELECT position FROM stream_positions WHERE stream = @stream AND position > @after AND position <= @end)
               UNION ALL SELECT position, type, at, data FROM events WHERE position > max(@after, ${indexedTo}) AND position <= @end AND stream = @stream
               ORDER BY position LIMIT ${PAGE}`,
            )
            .raw();
    return {
      kind: kindOf(first?.type),
      // Counted when asked: a count is a scan of every row in the bounds.
      get count() {
        return (db.prepare('SELECT count(*) AS n FROM events WHERE position > ? AND position <= ?').get(after, end) as { n: number }).n;
      },
      end,
      *events(stream) {
        for (let from = after; ;) {
          const page = (stream === undefined ? rows.all(from, end) : streamRows.all({ stream, after: from, end })) as RawRow[];
          for (let i = 0; i < page.length; i++) yield parse(page[i]!);
          if (page.length < PAGE) return;
          from = page[page.length - 1]![0];
        }
      },
      *streams() {
        const found = db
          .prepare('SELECT stream FROM events WHERE position > ? AND position <= ? GROUP BY stream ORDER BY min(position)')
          .pluck()
          .iterate(after, end);
        yield* found as IterableIterator<string>;
      },
      last(type) {
        const row = db
          .prepare('SELECT position, type, at, data FROM events WHERE type = ? AND position <= ? ORDER BY position DESC LIMIT 1')
          .raw()
          .get(type, end) as RawRow | undefined;
        return row === undefined ? undefined : parse(row);
      },
      snapshots: () =>
        readSnapshots(db)
          .filter((snapshot) => snapshot.position <= end)
          .reverse(),
    };
  }

  close(): void {
    this.db.close();
  }
}
