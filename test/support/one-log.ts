/**
 * A backend's one log in PostgreSQL, as a deployment from before the partitions left it: the schema at
 * migration 4, the events in `events` with `log_head` at the last, and the snapshots given. Written by
 * SQL, as that build's nodes did (migration 6 makes these tables read-only).
 */
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import { backendStreamOf } from '../../machines/reasoning/backend-events.js';
import { openPool } from '../../storage/postgres/connection.js';
import { MIGRATIONS, migrate } from '../../storage/postgres/migrations.js';
import { POSTGRES_URL } from './postgres.js';

export async function writeOneLog(
  schema: string,
  events: readonly BackendEvent[],
  snapshots: ReadonlyArray<{ readonly position: number; readonly data: string }> = [],
): Promise<void> {
  const pool = openPool({ url: POSTGRES_URL, schema }, () => {});
  try {
    await migrate(
      pool,
      schema,
      MIGRATIONS.filter(({ version }) => version <= 4),
    );
    await pool.query(
      'INSERT INTO events (position, stream, type, at, data) SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[])',
      [
        events.map((_, i) => i + 1),
        events.map(backendStreamOf),
        events.map((e) => e.type),
        events.map((e) => e.at),
        events.map((e) => JSON.stringify(e)),
      ],
    );
    await pool.query('UPDATE log_head SET position = $1', [events.length]);
    for (const { position, data } of snapshots)
      await pool.query('INSERT INTO snapshots (position, at, data) VALUES ($1, 0, $2)', [position, data]);
  } finally {
    await pool.end();
  }
}
