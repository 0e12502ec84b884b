/**
 * Backend nodes as real processes for the process tests (test/process/cluster.test.ts, ownership.test.ts):
 * the built CLI's `backend --store --pubsub` started N times on one schema and a broker namespace of the
 * test's own, behind a balancer that sends each request to the next node. A node can be signalled
 * (SIGKILL, SIGSTOP, SIGCONT) and started again with the same flags; the shared log can be read back.
 */
import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { expect } from 'vitest';
import { startBalancer, type Balancer } from './balancer.js';
import { removeNamespace } from './brokers.js';
import { started, type Exit } from './child.js';
import { tempDir } from './host.js';
import { request } from './http.js';
import { testSchema } from './postgres.js';

export const OPERATOR = 'operator-token-of-the-cluster-test';

export interface ClusterNode {
  readonly url: string;
  /** The node's epoch (its `/healthz`): what `partitions.owner` and `partition_events.node` name. */
  readonly epoch: string;
  kill(signal?: NodeJS.Signals): void;
  readonly exited: Promise<Exit>;
  /** What it printed on stderr so far (its log). */
  readonly stderr: () => string;
}

export interface Integration {
  readonly integration_id: string;
  readonly relay_token: string;
  readonly client_token: string;
}

export interface ProcessCluster {
  readonly balancer: Balancer;
  /** The nodes, by index (a restarted node takes its old index). */
  readonly nodes: ClusterNode[];
  readonly postgres: string;
  readonly schema: string;
  /** Starts node `index` again with the same flags (stop it first). */
  restart(index: number): Promise<ClusterNode>;
  /** A new integration, made by the operator through the balancer. */
  addIntegration(): Promise<Integration>;
  /** A query on the cluster's schema (its tables unqualified). */
  sql<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
}

/** `count` backend processes on a fresh schema of `postgres` and a fresh namespace of `broker`; `flags` added to each. */
export async function startCluster(
  postgres: string,
  broker: string,
  stops: Array<() => Promise<unknown>>,
  { count = 3, flags = [] }: { readonly count?: number; readonly flags?: readonly string[] } = {},
): Promise<ProcessCluster> {
  const dir = tempDir();
  stops.push(async () => rmSync(dir, { recursive: true, force: true }));
  const tokenFile = join(dir, 'operator-token');
  writeFileSync(tokenFile, OPERATOR, { mode: 0o600 });
  const schema = testSchema();
  const namespace = `test_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  stops.push(() => removeNamespace(broker, namespace).catch(() => {}));
  const args = [
    ...['backend', '--store', postgres, '--schema', schema, '--pubsub', broker, '--namespace', namespace],
    ...['--port', '0', '--token-file', tokenFile, '--log-level', 'warn', ...flags],
  ];
  const start = async (): Promise<ClusterNode> => {
    const node = await started(args);
    const url = String(node.line.listening);
    const { epoch } = (await request(`${url}/healthz`)).body as { epoch: string };
    return { url, epoch, kill: (signal = 'SIGKILL') => node.child.kill(signal), exited: node.exited, stderr: () => node.output.stderr };
  };
  const nodes: ClusterNode[] = [];
  for (let i = 0; i < count; i += 1) nodes.push(await start());
  const balancer = await startBalancer(() => nodes.map((node) => node.url));
  stops.push(() => balancer.close());
  // A pool: it reconnects by itself after a test restarts PostgreSQL, and an idle connection cut then is no failure.
  const pool = new pg.Pool({ connectionString: postgres, options: `-c search_path=${schema}`, max: 2 });
  pool.on('error', () => {});
  stops.push(() => pool.end());
  return {
    balancer,
    nodes,
    postgres,
    schema,
    restart: async (index) => (nodes[index] = await start()),
    async addIntegration() {
      const created = await request(`${balancer.url}/api/v1/admin/integrations`, { token: OPERATOR, body: {} });
      expect(created.status).toBe(201);
      return created.body as Integration;
    },
    sql: async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) => (await pool.query<R>(text, values)).rows,
  };
}

/** Each job's events in the shared log, by type, in the order of its partition. */
export async function eventsByJob(cluster: ProcessCluster): Promise<Map<string, string[]>> {
  const rows = await cluster.sql<{ data: string }>(
    `SELECT data FROM partition_events WHERE stream LIKE 'job:%' ORDER BY partition, version`,
  );
  const jobs = new Map<string, string[]>();
  for (const { data } of rows) {
    const event = JSON.parse(data) as { job_id: string; type: string };
    jobs.set(event.job_id, [...(jobs.get(event.job_id) ?? []), event.type]);
  }
  return jobs;
}

/** What a job's client sends: a line of a call to analyse. */
export const PAYLOAD = { session_id: 'call', transcript: [{ speaker: 'Ana', text: 'We decided to start in March.' }] };

export const SETTLED = new Set(['job.completed', 'job.failed', 'job.expired', 'job.cancelled']);
