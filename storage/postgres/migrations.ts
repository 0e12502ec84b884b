/**
 * The shared store's schema, as numbered migrations run in order on start. Each runs once, in its own
 * transaction, recorded in `schema_migrations`; nodes starting together take turns (an advisory lock on
 * the schema's name), so exactly one of them applies each. A schema that has a migration this build does
 * not know was made by a newer build: it is refused, not guessed at. Add a migration at the end; never
 * change one that has shipped.
 */
import type pg from 'pg';
import { SchemaMismatchError } from '../errors.js';
import { inTransaction, queryOn } from './connection.js';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'event log',
    sql: `
      -- The backend's events, in one order every node folds. data is the event's JSON text as written.
      CREATE TABLE events (
        position bigint PRIMARY KEY,
        stream text NOT NULL,
        type text NOT NULL,
        at bigint NOT NULL,
        data text NOT NULL
      );
      CREATE INDEX events_by_stream ON events (stream, position);
      -- The newest position: its row lock is held from an append's decision to its commit, so positions
      -- become visible in order and a reader that has folded up to P never misses one below it.
      CREATE TABLE log_head (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        position bigint NOT NULL
      );
      INSERT INTO log_head (position) VALUES (0);
    `,
  },
  {
    version: 2,
    name: 'presence and pairing misses',
    sql: `
      -- Until when each integration counts as online: the newest heartbeat's, whichever node took it.
      CREATE TABLE presence (
        integration_id text PRIMARY KEY,
        online_until bigint NOT NULL
      );
      -- When pairing codes that named no pairing came (the limit on guessing is the service's).
      CREATE TABLE pairing_misses (at bigint NOT NULL);
      CREATE INDEX pairing_misses_by_time ON pairing_misses (at);
    `,
  },
  {
    version: 3,
    name: 'snapshots',
    sql: `
      -- The fold as of a position, so that a node's start folds only what came after the newest.
      CREATE TABLE snapshots (
        position bigint PRIMARY KEY,
        at bigint NOT NULL,
        data text NOT NULL
      );
    `,
  },
  {
    version: 4,
    name: 'pairing attempts by source',
    sql: `
      -- The pairing limits are each source's (an IPv4 address or an IPv6 /64), not the service's: pairing
      -- starts and codes that named no pairing, by source. The rows of pairing_misses lasted a minute.
      DROP TABLE pairing_misses;
      CREATE TABLE pairing_attempts (kind text NOT NULL, source text NOT NULL, at bigint NOT NULL);
      CREATE INDEX pairing_attempts_by_source ON pairing_attempts (kind, source, at);
      CREATE INDEX pairing_attempts_by_time ON pairing_attempts (at);
    `,
  },
  {
    version: 5,
    name: 'partitions',
    sql: `
      -- The log partitioned by integration (storage/postgres/partitioned-log.ts): each partition's head,
      -- whose row lock its appends take turns on, and its lease (owner, fencing token, until when by the
      -- database's clock in ms). live: it has timers, so one whose lease expired is an orphan to claim.
      CREATE TABLE partitions (
        partition text PRIMARY KEY,
        version bigint NOT NULL DEFAULT 0,
        owner text,
        fence bigint NOT NULL DEFAULT 0,
        lease_until bigint NOT NULL DEFAULT 0,
        live boolean NOT NULL DEFAULT false
      );
      CREATE INDEX partitions_orphans ON partitions (live, lease_until) WHERE live;
      -- Each partition's events, numbered from 1. node: who committed it; fence: the token it was
      -- appended under as the owner (null when not). data is the event's JSON text as written.
      CREATE TABLE partition_events (
        partition text NOT NULL,
        version bigint NOT NULL,
        stream text NOT NULL,
        type text NOT NULL,
        at bigint NOT NULL,
        node text NOT NULL,
        fence bigint,
        data text NOT NULL,
        PRIMARY KEY (partition, version)
      );
      CREATE INDEX partition_events_by_stream ON partition_events (partition, stream, version);
      -- Each partition's fold as of a version, the newest two kept.
      CREATE TABLE partition_snapshots (
        partition text NOT NULL,
        version bigint NOT NULL,
        at bigint NOT NULL,
        data text NOT NULL,
        PRIMARY KEY (partition, version)
      );
    `,
  },
  {
    version: 6,
    name: 'the one log converted',
    sql: `
      -- The one log of migrations 1 and 3, converted into partitions (storage/postgres/one-log.ts): this row is
      -- written by the code that converts, in the transaction that writes the partitions, since the fold that
      -- converts is the engine's, not SQL. position: the one log's head it converted (0: it was empty).
      CREATE TABLE one_log_conversion (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        position bigint NOT NULL,
        partitions integer NOT NULL,
        converted_at timestamptz NOT NULL DEFAULT now()
      );
      -- The one log is read-only from here, kept for whoever debugs: a node of an older build still running
      -- has its appends refused (its client is never told yes), instead of accepted into a log no node reads.
      CREATE FUNCTION one_log_read_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'the table % of the one log is read-only: it was converted into partitions', TG_TABLE_NAME
          USING ERRCODE = 'read_only_sql_transaction';
      END $$;
      CREATE TRIGGER events_read_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION one_log_read_only();
      CREATE TRIGGER log_head_read_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON log_head
        FOR EACH STATEMENT EXECUTE FUNCTION one_log_read_only();
      CREATE TRIGGER snapshots_read_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON snapshots
        FOR EACH STATEMENT EXECUTE FUNCTION one_log_read_only();
    `,
  },
];

/** Brings the pool's schema up to the newest migration; resolves with the version it is at. */
export async function migrate(pool: pg.Pool, schema: string, migrations: readonly Migration[] = MIGRATIONS): Promise<number> {
  const query = queryOn(pool);
  await query(`CREATE SCHEMA IF NOT EXISTS ${schema}`).catch(async (error: unknown) => {
    // Two nodes creating it at once: the loser sees a unique violation, and the schema is there.
    if ((error as { code?: string }).code !== '23505') throw error;
  });
  return inTransaction(pool, async (tx) => {
    await tx('SELECT pg_advisory_xact_lock(hashtext($1))', [`assistant-relay:migrate:${schema}`]);
    await tx(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const applied = (await tx<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map(
      (row) => row.version,
    );
    const known = new Set(migrations.map((m) => m.version));
    const unknown = applied.filter((version) => !known.has(version));
    if (unknown.length > 0)
      throw new SchemaMismatchError(
        `the schema ${schema} has migrations this build does not know (${unknown.join(', ')}): it was made by a newer assistant-relay`,
      );
    for (const migration of migrations) {
      if (applied.includes(migration.version)) continue;
      await tx(migration.sql);
      await tx('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
    }
    return Math.max(0, ...migrations.map((m) => m.version));
  });
}
