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

/** Runs one query on a cluster's log, `{postgres url}#{schema}`, with `{schema}` in the text replaced. */
async function onCluster<R extends pg.QueryResultRow>(db: string, text: string): Promise<R[]> {
  const [url, schema] = db.split('#') as [string, string];
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text.replaceAll('{schema}', schema))).rows;
  } finally {
    await client.end();
  }
}

const isCluster = (db: string) => db.startsWith('postgres');

/** How many events a backend's log holds: an SQLite file, or a cluster's (`ServedBackend.db`). */
export async function countBackendEvents(db: string): Promise<number> {
  if (!isCluster(db)) return countEvents(db);
  return Number((await onCluster<{ n: string }>(db, 'SELECT count(*) AS n FROM {schema}.partition_events'))[0]!.n);
}

/** A backend's events, oldest first: from an SQLite file, or a cluster's (`ServedBackend.db`). */
export async function readBackendEvents(db: string): Promise<Array<Record<string, unknown> & { type: string }>> {
  if (!isCluster(db)) return readEvents(db);
  return (await onCluster<{ data: string }>(db, 'SELECT data FROM {schema}.partition_events ORDER BY partition, version')).map((row) =>
    JSON.parse(row.data),
  );
}
