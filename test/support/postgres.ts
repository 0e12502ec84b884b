/**
 * PostgreSQL for tests: the machine's server on loopback (`.ci/run` starts it if it is not running). Each
 * test works in a schema of its own, dropped when the test file is done, so suites run side by side.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll } from 'vitest';

export const POSTGRES_URL = process.env.ASSISTANT_RELAY_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

const made = new Set<string>();

/** A fresh schema name, dropped (with everything in it) after the test file. */
export function testSchema(): string {
  const schema = `test_${randomBytes(6).toString('hex')}`;
  made.add(schema);
  return schema;
}

afterAll(async () => {
  if (made.size === 0) return;
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    for (const schema of made) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    made.clear();
    await client.end();
  }
});
