/**
 * The job baselines' setups (issue 26): the same round trip as the relay's job by a bare `node:http`
 * server in memory (bench/baselines/jobs-plain.ts) and by fastify 5 with better-sqlite3 committing every
 * step before it is answered or sent (bench/baselines/jobs-durable.ts), each a process of its own, one
 * integration, and the minimal plugin of bench/clients/job-plugin.ts in the bench process. Afterwards the
 * durable baseline's log must hold a `job.completed` for every job measured.
 */
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { ROOT, TSX } from '../contenders.js';
import { minimalPlugin } from '../clients/job-plugin.js';
import { startServer, stopServer } from '../lib.js';
import type { Channel } from './jobs.js';

export type BaselineSetup = 'baseline: node:http, in memory' | 'baseline: fastify + SQLite, durable';
export const BASELINE_SETUPS: readonly BaselineSetup[] = ['baseline: node:http, in memory', 'baseline: fastify + SQLite, durable'];
export const isBaseline = (setup: string): setup is BaselineSetup => (BASELINE_SETUPS as readonly string[]).includes(setup);

export async function openBaseline(setup: BaselineSetup, dir: string): Promise<Channel> {
  const integration = randomUUID();
  const client = randomUUID();
  const relay = randomUUID();
  const durable = setup === 'baseline: fastify + SQLite, durable';
  const db = join(dir, 'jobs-durable.db');
  const script = join(ROOT, `bench/baselines/${durable ? 'jobs-durable' : 'jobs-plain'}.ts`);
  const args = [
    '--port',
    '0',
    '--integration',
    integration,
    '--client-token',
    client,
    '--relay-token',
    relay,
    ...(durable ? ['--db', db] : []),
  ];
  const server = await startServer(setup, ['--import', TSX, script, ...args], {
    cwd: dir,
    stderrPath: join(dir, 'baseline.stderr'),
    timeoutMs: 15_000,
  });
  const base = `${server.url.origin}/api/v1/assistant/integrations/${integration}`;
  let failure: Error | undefined;
  const closePlugin = await minimalPlugin(base, relay, (error) => (failure ??= error));
  return {
    bases: [base],
    next: 0,
    headers: { authorization: `Bearer ${client}` },
    servers: [server],
    async finish(measured) {
      closePlugin();
      await stopServer(server, 10_000);
      if (failure !== undefined) throw new Error(`${setup}: the plugin failed: ${failure.message}`);
      if (!durable) return;
      const conn = new Database(db, { readonly: true });
      try {
        const { n } = conn.prepare("SELECT count(*) AS n FROM log WHERE json_extract(data, '$.type') = 'job.completed'").get() as {
          n: number;
        };
        if (n < measured) throw new Error(`${setup}: ${measured} jobs measured, but ${n} job.completed in its log`);
      } finally {
        conn.close();
      }
    },
    async remove() {
      closePlugin();
      await stopServer(server, 1_000);
    },
  };
}
