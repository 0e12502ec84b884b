/**
 * An event log in PostgreSQL that several processes append to and fold, in one order. An append is one
 * transaction: it locks the log's head (so appends take turns, and a position becomes visible only after
 * every position below it), hands the decider the events committed since the caller's last, and appends
 * what it decides after them. Reads need no lock: what is committed is a gapless prefix of positions.
 */
import type pg from 'pg';
import type { LogRecord, StoredEvent } from '../event-log.js';
import { KEPT_SNAPSHOTS } from '../log-snapshots.js';
import { openPool, inTransaction, queryOn, type PostgresOptions, type Query } from './connection.js';
import { migrate } from './migrations.js';

export interface PgEventLogOptions<E> extends PostgresOptions {
  /** Which aggregate an event belongs to ('' for none): what `removeStreams` removes by. */
  readonly streamOf: (event: E) => string;
  /** An idle connection the server dropped: reported, never fatal (the pool reconnects). */
  readonly onIdleError?: (error: unknown) => void;
}

/** Events read at once: a start or a long catch-up reads page after page. */
const PAGE = 1_000;

interface EventRow {
  position: string;
  data: string;
}

/** A page of committed events after a position, oldest first: the position is a number, written in. */
function pageAfter(position: number): string {
  return `SELECT position, data FROM events WHERE position > ${Math.trunc(position)} ORDER BY position LIMIT ${PAGE}`;
}

export class PgEventLog<E extends LogRecord> {
  private readonly query: Query;
  private closed = false;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly options: PgEventLogOptions<E>,
  ) {
    this.query = queryOn(pool);
  }

  /** Connects and brings the schema up to date. */
  static async open<E extends LogRecord>(options: PgEventLogOptions<E>): Promise<PgEventLog<E>> {
    const pool = openPool(options, options.onIdleError ?? (() => {}));
    try {
      await migrate(pool, options.schema);
    } catch (error) {
      await pool.end();
      throw error;
    }
    return new PgEventLog(pool, options);
  }

  /** The pool, for the other tables of the same schema (presence). */
  get connections(): pg.Pool {
    return this.pool;
  }

  /** Up to a page of committed events after `position`, oldest first. */
  async read(after: number): Promise<StoredEvent<E>[]> {
    return (await this.query<EventRow>(pageAfter(after))).rows.map(stored<E>);
  }

  /**
   * One append: with the head locked, `decide` is handed the events committed after `after` (which it must
   * take in before deciding) and returns what to append after them. Resolves once committed, with the
   * positions the new events took; rejects, and nothing is appended, if anything fails.
   */
  async append(after: number, decide: (committed: readonly StoredEvent<E>[]) => readonly E[]): Promise<StoredEvent<E>[]> {
    // The lock and the first page of what others committed since `after`, with the BEGIN: one round trip.
    return inTransaction(
      this.pool,
      (tx, [locked, firstPage]) =>
        this.appendLocked(tx, Number((locked!.rows[0] as { position: string }).position), firstPage!.rows as EventRow[], decide),
      ['SELECT position FROM log_head FOR UPDATE', pageAfter(after)],
    );
  }

  private async appendLocked(
    tx: Query,
    head: number,
    firstPage: readonly EventRow[],
    decide: (committed: readonly StoredEvent<E>[]) => readonly E[],
  ): Promise<StoredEvent<E>[]> {
    const committed = firstPage.map(stored<E>);
    for (let from = committed.at(-1)?.position ?? head; from < head;) {
      const { rows } = await tx<EventRow>(pageAfter(from));
      if (rows.length === 0) break;
      committed.push(...rows.map(stored<E>));
      from = committed.at(-1)!.position;
    }
    const events = decide(committed);
    if (events.length === 0) return [];
    const positions = events.map((_, i) => head + 1 + i);
    // The events and the new head in one statement: one round trip with the head locked.
    await tx(
      'WITH appended AS (INSERT INTO events (position, stream, type, at, data) SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[])) UPDATE log_head SET position = $6',
      [
        positions,
        events.map(this.options.streamOf),
        events.map((e) => e.type),
        events.map((e) => e.at),
        events.map((e) => JSON.stringify(e)),
        head + events.length,
      ],
    );
    return events.map((event, i) => ({ position: positions[i]!, event }));
  }

  /** Stores a snapshot of the fold as of `position` (a committed event's), keeping only the newest `KEPT_SNAPSHOTS`. */
  async writeSnapshot(position: number, data: string, at: number): Promise<void> {
    await inTransaction(this.pool, async (tx) => {
      await tx('INSERT INTO snapshots (position, at, data) VALUES ($1, $2, $3) ON CONFLICT (position) DO NOTHING', [position, at, data]);
      await tx('DELETE FROM snapshots WHERE position NOT IN (SELECT position FROM snapshots ORDER BY position DESC LIMIT $1)', [
        KEPT_SNAPSHOTS,
      ]);
    });
  }

  /** The stored snapshots, newest first. */
  async snapshots(): Promise<Array<{ readonly position: number; readonly data: string }>> {
    const { rows } = await this.query<{ position: string; data: string }>('SELECT position, data FROM snapshots ORDER BY position DESC');
    return rows.map((row) => ({ position: Number(row.position), data: row.data }));
  }

  /** The newest committed position: what a health check reads. */
  async head(): Promise<number> {
    return Number((await this.query<{ position: string }>('SELECT position FROM log_head')).rows[0]!.position);
  }

  /** The committed events of one stream, oldest first. */
  async readStream(stream: string): Promise<StoredEvent<E>[]> {
    return (await this.query<EventRow>('SELECT position, data FROM events WHERE stream = $1 ORDER BY position', [stream])).rows.map(
      stored<E>,
    );
  }

  /** The position of the newest committed event of `stream`; 0 if it has none. */
  async lastPositionOf(stream: string): Promise<number> {
    return Number(
      (await this.query<{ last: string }>('SELECT coalesce(max(position), 0) AS last FROM events WHERE stream = $1', [stream])).rows[0]!
        .last,
    );
  }

  /**
   * Removes the events of `streams` (aggregates the fold has forgotten) stored before `position`:
   * retention's one exception to append-only. Returns how many went.
   */
  async removeStreams(streams: readonly string[], position: number): Promise<number> {
    const named = streams.filter((stream) => stream !== '');
    if (named.length === 0) return 0;
    return (await this.query('DELETE FROM events WHERE stream = ANY($1::text[]) AND position < $2', [named, position])).rowCount ?? 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

function stored<E>(row: EventRow): StoredEvent<E> {
  return { position: Number(row.position), event: JSON.parse(row.data) as E };
}
