/**
 * Connections to PostgreSQL for the shared stores: a pool whose every connection works in one schema
 * (`search_path`), so that several deployments, or several tests, share a database without meeting; and
 * what a failure of the database means to the engine: unreachable (`StoreUnreachableError`, answered 503
 * `store_unavailable` and retried by the caller) or a defect of ours (thrown as it is).
 */
import pg from 'pg';
import { EventLogError } from '../errors.js';

export interface PostgresOptions {
  /** `postgres://user@host:port/database` */
  readonly url: string;
  /** The schema every table lives in, created if absent: lowercase letters, digits and `_`. */
  readonly schema: string;
  /** Connections kept at most (default 10). Requests beyond it wait for one, up to `connectTimeoutMs`. */
  readonly poolSize?: number;
  /** How long getting a connection may take before the store counts as unreachable (default 5 s). */
  readonly connectTimeoutMs?: number;
  /** How long one statement may run before PostgreSQL cancels it (default 30 s): a lock never waited on forever. */
  readonly statementTimeoutMs?: number;
}

export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The schema of a service that names none. */
export const DEFAULT_SCHEMA = 'assistant_relay';

export class StoreUnreachableError extends EventLogError {
  override readonly name = 'StoreUnreachableError';
  readonly code = 'event_log_unreachable';

  constructor(cause: unknown) {
    super(`PostgreSQL cannot be reached: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** So many decisions wait for the store that one more would only wait longer: refused as if it were away. */
export class StoreBehindError extends EventLogError {
  override readonly name = 'StoreBehindError';
  readonly code = 'event_log_unreachable';

  constructor(waiting: number) {
    super(`PostgreSQL is behind: ${waiting} decisions wait for it`);
  }
}

/** SQLSTATE classes of a connection that failed or a server that is going away or out of resources. */
const UNREACHABLE_CLASSES = new Set(['08', '53', '57', '58']);

/**
 * A failure of a call into `pg`, as the engine should see it. A statement PostgreSQL refused carries a
 * five-character SQLSTATE: unreachable only in the classes above, else a defect of ours, thrown as it is.
 * Anything else `pg` throws is the connection's (refused, reset, terminated, timed out).
 */
export function storeFailure(error: unknown): unknown {
  if (error instanceof StoreUnreachableError) return error;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (error instanceof pg.DatabaseError && typeof code === 'string' && !UNREACHABLE_CLASSES.has(code.slice(0, 2))) return error;
  return new StoreUnreachableError(error);
}

export type Query = <R extends pg.QueryResultRow>(text: string, values?: readonly unknown[]) => Promise<pg.QueryResult<R>>;

/** How long the server lets a transaction wait on its client before ending it (and its locks). */
export const IDLE_IN_TRANSACTION_MS = 10_000;

export function openPool(options: PostgresOptions, onIdleError: (error: unknown) => void): pg.Pool {
  if (!SCHEMA_NAME.test(options.schema)) throw new RangeError(`schema must match ${SCHEMA_NAME}: ${JSON.stringify(options.schema)}`);
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    // A transaction left open by a node that stopped mid-append (paused, cut off) holds its partition's row
    // lock: the server ends it after 10 s, so the integration's other nodes and a new owner go on.
    options: `-c search_path=${options.schema} -c statement_timeout=${options.statementTimeoutMs ?? 30_000} -c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_MS}`,
    application_name: 'assistant-relay',
  });
  // An idle connection the server dropped (a restart): the pool replaces it; without a listener it would crash the process.
  pool.on('error', onIdleError);
  return pool;
}

/** Statements on any connection of the pool, or on one (a transaction's), their failures as the engine should see them. */
export function queryOn(on: pg.Pool | pg.PoolClient): Query {
  return async (text, values) => {
    try {
      return await on.query(text, values as unknown[]);
    } catch (error) {
      throw storeFailure(error);
    }
  };
}

/**
 * Runs `work` in a transaction on one connection. It is rolled back if `work` throws (its own defect or a
 * statement refused); a connection that failed is dropped, not given back to the pool. `first`,
 * statements without parameters, are sent with the BEGIN in one round trip, and their results handed to
 * `work` in order.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (query: Query, first: pg.QueryResult[]) => Promise<T>,
  first: readonly string[] = [],
): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw storeFailure(error);
  }
  const query = queryOn(client);
  let broken: Error | undefined;
  // The pool listens for a connection's errors only while it is idle: one that fails between our
  // statements (a server going down) would otherwise throw from the client and end the process.
  const failed = (error: Error) => (broken = error);
  client.on('error', failed);
  try {
    // A simple query of several statements answers with each one's result; of one, with its result alone.
    const begun: unknown = await query(['BEGIN', ...first].join('; '));
    const result = await work(query, Array.isArray(begun) ? (begun as pg.QueryResult[]).slice(1) : []);
    await query('COMMIT');
    return result;
  } catch (error) {
    if (error instanceof StoreUnreachableError) broken = error;
    else await query('ROLLBACK').catch((rollback: unknown) => (broken = rollback as Error));
    throw error;
  } finally {
    client.off('error', failed);
    client.release(broken);
  }
}
