/** Reads an event log file directly, as a debugger would: to assert what was (and was not) appended. */
import Database from 'better-sqlite3';

export function countEvents(db: string): number {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return (conn.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
  } finally {
    conn.close();
  }
}

export function readEvents(db: string): Array<Record<string, unknown> & { type: string }> {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return (conn.prepare('SELECT data FROM events ORDER BY position').all() as Array<{ data: string }>).map((r) => JSON.parse(r.data));
  } finally {
    conn.close();
  }
}
