/**
 * Which events each stream (a session, a job) has: the positions of each stream, indexed a few thousand
 * events behind the log, up to `indexed_to`, so that an append writes no index page. An index on
 * `events (stream, position)` kept with every commit made each commit dirty a page per stream it carried
 * (a busy host's commit carries dozens), three quarters of its cost; here each stream's page is written
 * once a few thousand events. The events after `indexed_to` are a short tail a reader scans.
 */
import type Database from 'better-sqlite3';

export const STREAM_POSITIONS_TABLES = `
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

/** The stream index of a log open for writing (its tables made). */
export class StreamIndex {
  private indexedTo: number;
  /** Indexes the events after `indexedTo`, up to `last` (within a transaction). */
  private readonly indexTail: (last: number) => void;

  constructor(private readonly db: Database.Database) {
    const tail = db.prepare(
      'INSERT OR IGNORE INTO stream_positions (stream, position) SELECT stream, position FROM events WHERE position > ? ORDER BY stream, position',
    );
    const indexedTo = db.prepare('UPDATE stream_positions_to SET position = ? WHERE one = 1');
    this.indexTail = (last) => {
      tail.run(this.indexedTo);
      indexedTo.run(last);
      this.indexedTo = last;
    };
    this.indexedTo = streamIndexedTo(db);
  }

  /** Opened with `last` the newest event: a log made before the index gets it now, once, rather than in the middle of a commit. */
  opened(last: number): void {
    if (last - this.indexedTo >= STREAM_INDEX_LAG) this.upTo(last);
  }

  /** Within a commit's transaction that made `last` the newest event: the index catches up once it lags by `STREAM_INDEX_LAG`. */
  committed(last: number): void {
    if (last - this.indexedTo >= STREAM_INDEX_LAG) this.indexTail(last);
  }

  /** Up to date before a question about one stream (rare: a reconnect after an end, retention). */
  upTo(last: number): void {
    if (last > this.indexedTo) this.db.transaction(() => this.indexTail(last))();
  }
}
