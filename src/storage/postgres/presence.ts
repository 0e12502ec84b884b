/** The backend's presence (engine/backend/presence.ts) in PostgreSQL: one row an integration, the newest heartbeat's deadline. */
import type pg from 'pg';
import { poolQuery, type Query } from './connection.js';

export class PgPresence {
  private readonly query: Query;

  constructor(pool: pg.Pool) {
    this.query = poolQuery(pool);
  }

  async beat(integrationId: string, until: number): Promise<void> {
    await this.query(
      'INSERT INTO presence (integration_id, online_until) VALUES ($1, $2) ON CONFLICT (integration_id) DO UPDATE SET online_until = greatest(presence.online_until, excluded.online_until)',
      [integrationId, until],
    );
  }

  async until(integrationId: string): Promise<number | undefined> {
    const { rows } = await this.query<{ online_until: string }>('SELECT online_until FROM presence WHERE integration_id = $1', [integrationId]);
    return rows[0] === undefined ? undefined : Number(rows[0].online_until);
  }
}
