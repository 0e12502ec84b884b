/**
 * The memory scenario's store (issue 25): a fresh PostgreSQL schema holding `count` integrations, each
 * its partition with one `integration.created`, seeded at once. The first is appended through the store's
 * own API (PgPartitionedLog.append); the rest by one INSERT … SELECT generate_series that writes the
 * same rows, which is checked against the first (its head and its event's columns) and against what the
 * store reads back. Ids and tokens come from the index and a secret of the run, so the bench can act as
 * any integration's plugin and client without keeping 100,000 tokens.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { backendStreamOf, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { tokenDigest } from '../../protocol/tokens.js';
import { PgPartitionedLog } from '../../storage/postgres/partitioned-log.js';

/** The integration of index `i` (a UUID, as the backend's own ids are). */
export const integrationIdOf = (i: number) => `b0000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
const ID_SQL = `'b0000000-0000-4000-8000-' || lpad(to_hex(i), 12, '0')`;

export interface SeededStore {
  readonly schema: string;
  readonly count: number;
  /** How long seeding took, migrations included. */
  readonly seedMs: number;
  readonly relayToken: (i: number) => string;
  readonly clientToken: (i: number) => string;
}

const NODE = 'bench-seed';

/** What the backend logs when an operator creates integration `i` (engine/reasoning/integrations.ts), key for key. */
function createdOf(i: number, secret: string, at: number): BackendEvent {
  return {
    type: 'integration.created',
    integration_id: integrationIdOf(i),
    provider_kind: 'assistant-relay',
    relay_token_digest: tokenDigest(`${secret}-relay-${i}`),
    client_token_digest: tokenDigest(`${secret}-client-${i}`),
    at,
  };
}

export async function seedStore(url: string, schema: string, count: number): Promise<SeededStore> {
  const secret = randomBytes(12).toString('hex');
  const at = Date.now();
  const started = performance.now();
  const log = await PgPartitionedLog.open<BackendEvent>({ url, schema, streamOf: backendStreamOf });
  try {
    await log.append(integrationIdOf(0), 0, () => ({ events: [createdOf(0, secret, at)] }), { node: NODE });
    const digest = (role: string) => `encode(sha256(convert_to($1 || '-${role}-' || i, 'UTF8')), 'hex')`;
    const client = await log.connections.connect();
    try {
      await client.query('BEGIN');
      await client.query(`INSERT INTO partitions (partition, version) SELECT ${ID_SQL}, 1 FROM generate_series(1, $1::int - 1) AS i`, [
        count,
      ]);
      await client.query(
        `INSERT INTO partition_events (partition, version, stream, type, at, node, fence, data)
         SELECT id, 1, 'integration:' || id, 'integration.created', $2::bigint, $3, NULL,
           '{"type":"integration.created","integration_id":"' || id || '","provider_kind":"assistant-relay","relay_token_digest":"'
           || ${digest('relay')} || '","client_token_digest":"' || ${digest('client')} || '","at":' || $2::bigint::text || '}'
         FROM generate_series(1, $4::int - 1) AS i, LATERAL (SELECT ${ID_SQL} AS id) AS named`,
        [secret, at, NODE, count],
      );
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
    await check(log, url, schema, secret, at, count);
  } finally {
    await log.close();
  }
  return {
    schema,
    count,
    seedMs: performance.now() - started,
    relayToken: (i) => `${secret}-relay-${i}`,
    clientToken: (i) => `${secret}-client-${i}`,
  };
}

/** The seeded rows are the appended one's but for the integration, and the store reads back each event the backend would have logged. */
async function check(log: PgPartitionedLog<BackendEvent>, url: string, schema: string, secret: string, at: number, count: number) {
  for (const i of new Set([0, 1, Math.floor(count / 2), count - 1].filter((i) => i < count))) {
    const read = await log.read(integrationIdOf(i), 0);
    const expected = JSON.stringify([{ version: 1, event: createdOf(i, secret, at) }]);
    if (JSON.stringify(read) !== expected) throw new Error(`seeded integration ${i} reads back ${JSON.stringify(read)}, not ${expected}`);
  }
  if (count < 2) return;
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const rows = async (sql: string) =>
      (await db.query(sql, [[integrationIdOf(0), integrationIdOf(1)]])).rows.map((row: Record<string, unknown>) => JSON.stringify(row));
    const heads = await rows(
      `SELECT version, owner, fence, lease_until, live FROM ${schema}.partitions WHERE partition = ANY($1) ORDER BY partition`,
    );
    const events = await rows(
      `SELECT version, replace(stream, partition, '') AS stream, type, at, node, fence FROM ${schema}.partition_events WHERE partition = ANY($1) ORDER BY partition`,
    );
    if (heads[0] !== heads[1] || events[0] !== events[1])
      throw new Error(`the seeded rows differ from the appended ones: ${heads.join(' ')} ${events.join(' ')}`);
  } finally {
    await db.end();
  }
}
