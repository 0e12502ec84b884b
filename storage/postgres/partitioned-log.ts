/**
 * The log partitioned by integration (storage/partitions.ts) in PostgreSQL. Each partition has a head row
 * (its version and its lease) whose row lock its appends take turns on, so appends to two partitions
 * never wait on each other, and a node added adds capacity. An append is one transaction: the head
 * locked (created first if the partition is new, so that the first appends from two nodes take turns
 * too), the events committed since the caller's version handed to its decision, and what it decides
 * written with the new head in one statement, which commits only while the owner's lease holds when
 * the append names its fence. Reads need no lock: what is committed of a partition is a gapless prefix.
 */
import pg from 'pg';
import type { LogRecord } from '../event-log.js';
import { FencedError, PartitionExistsError } from '../errors.js';
import { KEPT_SNAPSHOTS } from '../log-snapshots.js';
import type { AppendDecision, AppendResult, Fence, PartitionEvent, PartitionedStore } from '../partitions.js';
import { openPool, inTransaction, queryOn, type PostgresOptions, type Query } from './connection.js';
import { migrate } from './migrations.js';
import { NOW_MS, PgPartitionLeases } from './partition-leases.js';

export interface PgPartitionedLogOptions<E> extends PostgresOptions {
  /** Which aggregate of its partition an event belongs to ('' for none): what `removeStreams` removes by. */
  readonly streamOf: (event: E) => string;
  /** An idle connection the server dropped: reported, never fatal (the pool reconnects). */
  readonly onIdleError?: (error: unknown) => void;
}

/** Events read at once: an append behind by more reads page after page. */
const PAGE = 1_000;

interface EventRow {
  version: string;
  data: string;
}

interface HeadRow {
  version: string;
  owner: string | null;
  fence: string;
  lease_until: string;
  live: boolean;
  now: string;
}

/**
 * Up to `limit` committed events of a partition after a version, oldest first: a statement without
 * parameters (the partition quoted by pg, the numbers written in), so that it can go with the BEGIN.
 */
function pageAfter(partition: string, after: number, limit = PAGE): string {
  return `SELECT version, data FROM partition_events WHERE partition = ${pg.escapeLiteral(partition)} AND version > ${Math.trunc(after)} ORDER BY version LIMIT ${Math.max(0, Math.trunc(limit))}`;
}

/** The events and the new heads in one statement; `head` is 0 if the fence named no longer holds. */
const CLAIMS = `$15::bigint IS NOT NULL AND coalesce($3, live) AND (owner IS NULL OR lease_until <= ${NOW_MS})`;
const WRITE = `WITH head AS (
    UPDATE partitions SET version = $2, live = coalesce($3, live),
      owner = CASE WHEN ${CLAIMS} THEN $8 ELSE owner END,
      fence = CASE WHEN ${CLAIMS} THEN fence + 1 ELSE fence END,
      lease_until = CASE WHEN ${CLAIMS} THEN ${NOW_MS} + $15 ELSE lease_until END
    WHERE partition = $1 AND ($4::text IS NULL OR (owner = $4 AND fence = $5 AND lease_until > ${NOW_MS}))
    RETURNING partition, owner, fence),
  born AS (
    INSERT INTO partitions (partition, version) SELECT * FROM unnest($6::text[], $7::bigint[])
    ON CONFLICT DO NOTHING RETURNING partition),
  appended AS (
    INSERT INTO partition_events (partition, version, stream, type, at, node, fence, data)
    SELECT e.partition, e.version, e.stream, e.type, e.at, $8, $5, e.data
    FROM unnest($9::text[], $10::bigint[], $11::text[], $12::text[], $13::bigint[], $14::text[]) AS e (partition, version, stream, type, at, data)
    WHERE e.partition = $1 OR e.partition IN (SELECT partition FROM born))
  SELECT (SELECT count(*) FROM head)::int AS head, ARRAY(SELECT partition FROM born) AS born,
    (SELECT owner FROM head) AS owner, (SELECT fence FROM head) AS fence`;

export class PgPartitionedLog<E extends LogRecord> implements PartitionedStore<E> {
  private readonly query: Query;
  private readonly leases: PgPartitionLeases;
  private closed = false;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly options: PgPartitionedLogOptions<E>,
  ) {
    this.query = queryOn(pool);
    this.leases = new PgPartitionLeases(this.query);
  }

  /** Connects and brings the schema up to date. */
  static async open<E extends LogRecord>(options: PgPartitionedLogOptions<E>): Promise<PgPartitionedLog<E>> {
    const pool = openPool(options, options.onIdleError ?? (() => {}));
    try {
      await migrate(pool, options.schema);
    } catch (error) {
      await pool.end();
      throw error;
    }
    return new PgPartitionedLog(pool, options);
  }

  /** The pool, for the other tables of the same schema (presence). */
  get connections(): pg.Pool {
    return this.pool;
  }

  async read(partition: string, after: number, limit = PAGE): Promise<PartitionEvent<E>[]> {
    return (await this.query<EventRow>(pageAfter(partition, after, limit))).rows.map(stored<E>);
  }

  async versions(partitions: readonly string[]): Promise<Map<string, number>> {
    const found = new Map(partitions.map((partition) => [partition, 0]));
    if (partitions.length === 0) return found;
    const { rows } = await this.query<{ partition: string; version: string }>(
      'SELECT partition, version FROM partitions WHERE partition = ANY($1::text[])',
      [partitions],
    );
    for (const row of rows) found.set(row.partition, Number(row.version));
    return found;
  }

  async append(
    partition: string,
    after: number,
    decide: (committed: readonly PartitionEvent<E>[]) => AppendDecision<E>,
    options: { readonly node: string; readonly fence?: Fence; readonly claim?: number },
  ): Promise<AppendResult<E>> {
    if (options.fence !== undefined && options.fence.partition !== partition)
      throw new RangeError(
        `the fence of partition ${JSON.stringify(options.fence.partition)} on an append to ${JSON.stringify(partition)}`,
      );
    const quoted = pg.escapeLiteral(partition);
    // The head created if new (a caller that has folded a version knows it exists), locked, and the first
    // page of what others committed since `after`, with the BEGIN: one round trip.
    const create = after === 0 ? [`INSERT INTO partitions (partition) VALUES (${quoted}) ON CONFLICT DO NOTHING`] : [];
    return inTransaction(
      this.pool,
      (tx, replies) =>
        this.appendLocked(tx, partition, replies.at(-2)!.rows[0] as HeadRow, replies.at(-1)!.rows as EventRow[], decide, options),
      [
        ...create,
        `SELECT version, owner, fence, lease_until, live, ${NOW_MS} AS now FROM partitions WHERE partition = ${quoted} FOR UPDATE`,
        pageAfter(partition, after),
      ],
    );
  }

  private async appendLocked(
    tx: Query,
    partition: string,
    locked: HeadRow,
    firstPage: readonly EventRow[],
    decide: (committed: readonly PartitionEvent<E>[]) => AppendDecision<E>,
    { node, fence, claim }: { readonly node: string; readonly fence?: Fence; readonly claim?: number },
  ): Promise<AppendResult<E>> {
    // A lease already lost is refused before deciding; the write checks it again, as the decision took time.
    if (
      fence !== undefined &&
      !(locked.owner === fence.node && Number(locked.fence) === fence.token && Number(locked.lease_until) > Number(locked.now))
    )
      throw new FencedError(fence);
    const head = Number(locked.version);
    const committed = firstPage.map(stored<E>);
    for (let from = committed.at(-1)?.version ?? head; from < head;) {
      const { rows } = await tx<EventRow>(pageAfter(partition, from));
      if (rows.length === 0) break;
      committed.push(...rows.map(stored<E>));
      from = committed.at(-1)!.version;
    }
    const decision = decide(committed);
    const born = decision.born ?? [];
    const names = born.map((b) => b.partition);
    const twice = names.filter((name, i) => name === partition || names.indexOf(name) !== i);
    if (twice.length > 0) throw new PartitionExistsError(twice);
    const result: AppendResult<E> = {
      committed,
      appended: decision.events.map((event, i) => ({ version: head + 1 + i, event })),
      born: born.map((b) => ({ partition: b.partition, appended: b.events.map((event, i) => ({ version: i + 1, event })) })),
    };
    const liveChanges = decision.live !== undefined && decision.live !== locked.live;
    if (decision.events.length === 0 && born.length === 0 && !liveChanges) return result;
    const rows = [
      ...result.appended.map((stored) => ({ partition, ...stored })),
      ...result.born.flatMap((b) => b.appended.map((stored) => ({ partition: b.partition, ...stored }))),
    ];
    const written = await tx<{ head: number; born: string[]; owner: string | null; fence: string | null }>(WRITE, [
      partition,
      head + decision.events.length,
      decision.live ?? null,
      fence?.node ?? null,
      fence?.token ?? null,
      names,
      born.map((b) => b.events.length),
      node,
      rows.map((row) => row.partition),
      rows.map((row) => row.version),
      rows.map((row) => this.options.streamOf(row.event)),
      rows.map((row) => row.event.type),
      rows.map((row) => row.event.at),
      rows.map((row) => JSON.stringify(row.event)),
      claim ?? null,
    ]);
    const { head: updated, born: made, owner, fence: token } = written.rows[0]!;
    if (updated === 0) throw new FencedError(fence!);
    if (made.length < names.length) throw new PartitionExistsError(names.filter((name) => !made.includes(name)));
    const claimed = claim !== undefined && owner === node && Number(token) > Number(locked.fence);
    return claimed ? { ...result, claimed: { partition, node, token: Number(token) } } : result;
  }

  async snapshot(partition: string): Promise<{ readonly version: number; readonly data: string } | undefined> {
    const { rows } = await this.query<{ version: string; data: string }>(
      'SELECT version, data FROM partition_snapshots WHERE partition = $1 ORDER BY version DESC LIMIT 1',
      [partition],
    );
    return rows.map((row) => ({ version: Number(row.version), data: row.data }))[0];
  }

  async writeSnapshot(partition: string, version: number, data: string, at: number): Promise<void> {
    // One statement: the delete does not see the row inserted beside it, so the kept are counted with it.
    await this.query(
      `WITH written AS (
         INSERT INTO partition_snapshots (partition, version, at, data) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING)
       DELETE FROM partition_snapshots WHERE partition = $1 AND version NOT IN (
         SELECT version FROM partition_snapshots WHERE partition = $1 UNION SELECT $2 ORDER BY version DESC LIMIT $5)`,
      [partition, version, at, data, KEPT_SNAPSHOTS],
    );
  }

  async readStream(partition: string, stream: string): Promise<PartitionEvent<E>[]> {
    const { rows } = await this.query<EventRow>(
      'SELECT version, data FROM partition_events WHERE partition = $1 AND stream = $2 ORDER BY version',
      [partition, stream],
    );
    return rows.map(stored<E>);
  }

  async removeStreams(partition: string, streams: readonly string[], version: number): Promise<number> {
    // '' is the partition's own events (no aggregate): never removed.
    const named = streams.filter((stream) => stream !== '');
    if (named.length === 0) return 0;
    const { rowCount } = await this.query(
      'DELETE FROM partition_events WHERE partition = $1 AND stream = ANY($2::text[]) AND version < $3',
      [partition, named, version],
    );
    return rowCount ?? 0;
  }

  claim(partition: string, node: string, leaseMs: number, takeover: boolean): Promise<Fence | undefined> {
    return this.leases.claim(partition, node, leaseMs, takeover);
  }

  renew(node: string, fences: readonly Fence[], leaseMs: number): Promise<Fence[]> {
    return this.leases.renew(node, fences, leaseMs);
  }

  release(fence: Fence): Promise<void> {
    return this.leases.release(fence);
  }

  claimOrphans(node: string, leaseMs: number, limit: number): Promise<Fence[]> {
    return this.leases.claimOrphans(node, leaseMs, limit);
  }

  async partitions(after: string, limit: number): Promise<string[]> {
    const { rows } = await this.query<{ partition: string }>(
      'SELECT partition FROM partitions WHERE partition > $1 ORDER BY partition LIMIT $2',
      [after, Math.max(0, Math.trunc(limit))],
    );
    return rows.map((row) => row.partition);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

function stored<E>(row: EventRow): PartitionEvent<E> {
  return { version: Number(row.version), event: JSON.parse(row.data) as E };
}
