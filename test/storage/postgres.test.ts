/** The shared store's connections (storage/postgres/connection.ts) against the machine's PostgreSQL. */
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { StoreUnreachableError, inTransaction, openPool, queryOn } from '../../storage/postgres/connection.js';
import { POSTGRES_URL, testSchema } from '../support/postgres.js';

let pool: pg.Pool | undefined;
afterEach(async () => {
  await pool?.end();
  pool = undefined;
});

it('a connection that fails between the statements of a transaction fails the transaction, not the process, and the pool goes on', async () => {
  pool = openPool({ url: POSTGRES_URL, schema: testSchema() }, () => {});
  const transaction = inTransaction(pool, async (tx) => {
    const { rows } = await tx<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const other = new pg.Client({ connectionString: POSTGRES_URL });
    await other.connect();
    await other.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    await other.end();
    // The server's goodbye arrives while no statement of ours runs.
    await new Promise((resolve) => setTimeout(resolve, 200));
    await tx('SELECT 1');
  });
  await expect(transaction).rejects.toBeInstanceOf(StoreUnreachableError);
  expect((await queryOn(pool)<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
});
