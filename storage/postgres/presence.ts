/** What the backend's nodes share besides the log (engine/reasoning/presence.ts), in PostgreSQL. */
import type pg from 'pg';
import { queryOn, type Query } from './connection.js';

/** One row an integration: the newest heartbeat's deadline. */
export class PgPresence {
  private readonly query: Query;

  constructor(pool: pg.Pool) {
    this.query = queryOn(pool);
  }

  async beat(integrationId: string, until: number): Promise<void> {
    await this.query(
      'INSERT INTO presence (integration_id, online_until) VALUES ($1, $2) ON CONFLICT (integration_id) DO UPDATE SET online_until = greatest(presence.online_until, excluded.online_until)',
      [integrationId, until],
    );
  }

  async until(integrationId: string): Promise<number | undefined> {
    const { rows } = await this.query<{ online_until: string }>('SELECT online_until FROM presence WHERE integration_id = $1', [
      integrationId,
    ]);
    return rows[0] === undefined ? undefined : Number(rows[0].online_until);
  }

  async forget(integrationIds: readonly string[]): Promise<void> {
    if (integrationIds.length > 0) await this.query('DELETE FROM presence WHERE integration_id = ANY($1::text[])', [integrationIds]);
  }
}

/** Each source's pairing starts and codes that named no pairing (engine/reasoning/presence.ts), a row each, kept for `keepMs`. */
export class PgPairingAttempts {
  private readonly query: Query;

  constructor(
    pool: pg.Pool,
    private readonly keepMs: number,
  ) {
    this.query = queryOn(pool);
  }

  async record(kind: string, source: string, at: number): Promise<void> {
    await this.query(
      'WITH gone AS (DELETE FROM pairing_attempts WHERE at <= $4) INSERT INTO pairing_attempts (kind, source, at) VALUES ($1, $2, $3)',
      [kind, source, at, at - this.keepMs],
    );
  }

  async since(kind: string, source: string, since: number): Promise<number[]> {
    const { rows } = await this.query<{ at: string }>(
      'SELECT at FROM pairing_attempts WHERE kind = $1 AND source = $2 AND at > $3 ORDER BY at',
      [kind, source, since],
    );
    return rows.map((row) => Number(row.at));
  }
}
