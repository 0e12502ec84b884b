/** Reads an event log directly, as a debugger would: to assert what was (and was not) appended. */
import Database from 'better-sqlite3';
import pg from 'pg';

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

/** The events of a backend's log: an SQLite file, or `{postgres url}#{schema}` (a cluster's). */
export async function countBackendEvents(db: string): Promise<number> {
  if (!db.startsWith('postgres')) return countEvents(db);
  const [url, schema] = db.split('#') as [string, string];
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.events`)).rows[0]!.n);
  } finally {
    await client.end();
  }
}
