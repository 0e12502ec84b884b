/** The bench's PostgreSQL (the machine's, on loopback; `ASSISTANT_RELAY_BENCH_POSTGRES` names another) and a one-off query on it. */
import pg from 'pg';

export const POSTGRES = process.env.ASSISTANT_RELAY_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

/** One statement on a connection of its own (the bench's setup and checks: never on a hot path). */
export async function query<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
  const client = new pg.Client({ connectionString: POSTGRES });
  await client.connect();
  try {
    return await client.query<R>(text, values);
  } finally {
    await client.end();
  }
}
