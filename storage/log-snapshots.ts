/**
 * The snapshots a log keeps of the state folded from it: each stored with the digest of its text and of
 * the event it was taken after, so that a start judges it before trusting it, and only the newest
 * `KEPT_SNAPSHOTS` kept.
 */
import type Database from 'better-sqlite3';
import { createHash } from 'node:crypto';

export const SNAPSHOTS_TABLE = `CREATE TABLE IF NOT EXISTS snapshots (
  position INTEGER PRIMARY KEY,
  at INTEGER NOT NULL,
  event_digest TEXT NOT NULL,
  digest TEXT NOT NULL,
  data TEXT NOT NULL
) STRICT`;

/** Snapshots kept: the newest, and the one before it in case the newest is found bad. */
export const KEPT_SNAPSHOTS = 2;

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

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * The snapshots of a log (open read-write or read-only), newest first, each judged against its digests.
 * A snapshot's text is read, and judged, only when asked for: a start uses the newest good one, and each
 * may be tens of megabytes.
 */
export function readSnapshots(db: Database.Database): StoredSnapshot[] {
  const exists = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'snapshots'").get();
  if (exists === undefined) return [];
  const rows = db
    .prepare(
      'SELECT s.position, s.at, s.event_digest, s.digest, e.data AS event FROM snapshots s LEFT JOIN events e ON e.position = s.position ORDER BY s.position DESC',
    )
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

/** Stores a snapshot as of `position` (a committed event's) with its digests, and keeps only the newest `KEPT_SNAPSHOTS`. */
export function writeSnapshot(db: Database.Database, position: number, data: string, at: number): void {
  const row = db.prepare('SELECT data FROM events WHERE position = ?').get(position) as { data: string } | undefined;
  if (row === undefined) throw new RangeError(`no event at position ${position} to snapshot after`);
  db.transaction(() => {
    db.prepare('INSERT OR REPLACE INTO snapshots (position, at, event_digest, digest, data) VALUES (?, ?, ?, ?, ?)').run(
      position,
      at,
      sha256(row.data),
      sha256(data),
      data,
    );
    db.prepare('DELETE FROM snapshots WHERE position NOT IN (SELECT position FROM snapshots ORDER BY position DESC LIMIT ?)').run(
      KEPT_SNAPSHOTS,
    );
  })();
}
