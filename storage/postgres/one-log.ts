/**
 * The one log the backend kept in PostgreSQL before it was partitioned by integration (migrations 1 and 3:
 * `events`, `log_head`, `snapshots`), and its conversion into partitions, once, in one transaction: the
 * one log read (its snapshots and events, handed to a fold that is the engine's), each partition's state
 * written as its first snapshot (version 0) with its head row, and the conversion recorded (migration 6's
 * row), so that a crash leaves all of it or none. Nodes starting together take turns on an advisory lock:
 * the first converts, the others find it done. The one log stays, read-only (migration 6's triggers).
 */
import type pg from 'pg';
import type { LogRecord, StoredEvent } from '../event-log.js';
import { SchemaMismatchError } from '../errors.js';
import { inTransaction, type Query } from './connection.js';

/** Events read at once from the one log. */
const PAGE = 1_000;
/** Partitions written in one statement. */
const WRITTEN_AT_ONCE = 500;

/** The one log as the conversion reads it, in its transaction. */
export interface OneLog<E> {
  /** Its newest committed position. */
  readonly head: number;
  /** Its stored snapshots, newest first. */
  snapshots(): Promise<Array<{ readonly position: number; readonly data: string }>>;
  /** Up to a page of its events after `position`, oldest first. */
  read(after: number): Promise<StoredEvent<E>[]>;
}

/** One partition as the conversion writes it: its state as its first snapshot, and whether it has timers (an orphan scan finds it). */
export interface ConvertedPartition {
  readonly partition: string;
  readonly live: boolean;
  readonly snapshot: string;
}

/** What a conversion did. */
export interface Conversion {
  /** The one log's head it converted. */
  readonly position: number;
  readonly partitions: number;
}

/**
 * Converts the one log unless that was done: `partitionsOf` folds it into the partitions to write, `at` is
 * when (the snapshots' time). Resolves with what this call converted; undefined if it was done before.
 * An empty one log is recorded as converted at position 0, with nothing written.
 */
export async function convertOneLog<E extends LogRecord>(
  pool: pg.Pool,
  partitionsOf: (log: OneLog<E>) => Promise<readonly ConvertedPartition[]>,
  at: number,
): Promise<Conversion | undefined> {
  return inTransaction(pool, async (tx) => {
    // A large log takes long to fold: the conversion, and the nodes waiting for it, are not cut off by the usual bound.
    await tx('SET LOCAL statement_timeout = 0');
    // The fold between the reads is this node's work, however long the one log: not an abandoned transaction.
    await tx('SET LOCAL idle_in_transaction_session_timeout = 0');
    await tx(`SELECT pg_advisory_xact_lock(hashtext('assistant-relay:convert:' || current_schema()))`);
    if ((await tx('SELECT position FROM one_log_conversion')).rows.length > 0) return undefined;
    const head = Number((await tx<{ position: string }>('SELECT position FROM log_head')).rows[0]!.position);
    if (head > 0 && (await tx('SELECT 1 FROM partitions LIMIT 1')).rows.length > 0)
      throw new SchemaMismatchError(
        `the schema holds both the one log (up to position ${head}) and partitions: it ran partitioned before the one log was converted, and this build cannot merge the two`,
      );
    const partitions = head === 0 ? [] : await partitionsOf(oneLogOn<E>(tx, head));
    for (let from = 0; from < partitions.length; from += WRITTEN_AT_ONCE) {
      const some = partitions.slice(from, from + WRITTEN_AT_ONCE);
      await tx(
        `WITH heads AS (INSERT INTO partitions (partition, live) SELECT * FROM unnest($1::text[], $2::boolean[]))
         INSERT INTO partition_snapshots (partition, version, at, data) SELECT p, 0, $3, d FROM unnest($1::text[], $4::text[]) AS s (p, d)`,
        [some.map((p) => p.partition), some.map((p) => p.live), at, some.map((p) => p.snapshot)],
      );
    }
    await tx('INSERT INTO one_log_conversion (position, partitions) VALUES ($1, $2)', [head, partitions.length]);
    return { position: head, partitions: partitions.length };
  });
}

function oneLogOn<E>(tx: Query, head: number): OneLog<E> {
  return {
    head,
    async snapshots() {
      const { rows } = await tx<{ position: string; data: string }>('SELECT position, data FROM snapshots ORDER BY position DESC');
      return rows.map((row) => ({ position: Number(row.position), data: row.data }));
    },
    async read(after) {
      const { rows } = await tx<{ position: string; data: string }>(
        'SELECT position, data FROM events WHERE position > $1 AND position <= $2 ORDER BY position LIMIT $3',
        [after, head, PAGE],
      );
      return rows.map((row) => ({ position: Number(row.position), event: JSON.parse(row.data) as E }));
    },
  };
}
