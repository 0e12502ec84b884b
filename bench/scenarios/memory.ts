/**
 * A node's memory against the integrations in the store (issue 25): a node holds only those it serves,
 * so with 100,000 integrations stored and 1,000 active its memory should be within 1.2x of its memory
 * with only the 1,000 stored. For each store size: a fresh schema seeded at once (memory-store.ts), one
 * backend node (the built CLI, PostgreSQL and NATS), then `active` integrations made active as
 * their plugin and client would: a heartbeat, the plugin's stream (SSE) held open, one job created by the
 * client, taken on the stream, run and completed by the plugin, read back completed by the client. The
 * bench process plays every plugin and client. After a settle, the node's resident memory (/proc), its
 * heap and the integrations it holds (its /metrics) are read, the streams still open.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { POSTGRES } from '../postgres.js';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { connectBroker } from '../../adapters/brokers/connect.js';
import { CLI, scratchDir } from '../contenders.js';
import { rssKiB, startServer, stopServer, type ServerChild } from '../lib.js';
import type { MemoryResults, MemoryRow } from '../results.js';
import { OPERATOR, operatorTokenFile } from './jobs.js';
import { integrationIdOf, seedStore, type SeededStore } from './memory-store.js';

const NATS = process.env.ASSISTANT_RELAY_BENCH_NATS ?? 'nats://127.0.0.1:4222';

export interface MemoryOptions {
  /** Integrations in the store, the first the baseline (1,000 and 100,000). */
  readonly stored: readonly number[];
  /** Integrations made active, the first of the store's. */
  readonly active: number;
  /** From the last made active to the reading. */
  readonly settleMs: number;
}

/** Integrations made active at once: enough to keep the node busy, few enough that none waits long. */
const AT_ONCE = 50;
const HEARTBEAT = JSON.stringify({
  plugin: { name: 'bench-plugin', version: '1.0.0' },
  provider_kind: 'assistant-relay',
  schema_versions: { min: 1, max: 1 },
  envelope_versions: { min: 1, max: 1 },
  status: 'ready',
  running_job_ids: [],
  reasoner: { name: 'builtin' },
});
const JOB = { purpose: 'live_analysis', payload: { session_id: 'bench', transcript: [{ speaker: 'Ana', text: 'What is the budget?' }] } };
const RESULT = JSON.stringify({ result: { insights: [{ text: 'Ask about the budget.', kind: 'question', confidence: 0.7 }] } });

export async function memory(options: MemoryOptions): Promise<MemoryResults> {
  const rows: MemoryRow[] = [];
  for (const stored of options.stored) rows.push(await memoryOf(stored, options));
  return { rows };
}

async function memoryOf(stored: number, options: MemoryOptions): Promise<MemoryRow> {
  const dir = scratchDir();
  const schema = `bench_${randomBytes(6).toString('hex')}`;
  const streams = new AbortController();
  let node: ServerChild | undefined;
  try {
    const store = await seedStore(POSTGRES, schema, stored);
    const args = ['--store', POSTGRES, '--schema', schema, '--pubsub', NATS, '--namespace', schema, '--token-file', operatorTokenFile(dir)];
    node = await startServer('memory node', [CLI, 'backend', '--port', '0', '--log-level', 'warn', ...args], {
      cwd: dir,
      stderrPath: join(dir, 'node.stderr'),
      timeoutMs: 30_000,
    });
    const started = rssKiB(node.child.pid!);
    const from = performance.now();
    const active = Math.min(options.active, stored);
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(AT_ONCE, active) }, async () => {
        while (next < active) await activate(node!.url.origin, store, next++, streams.signal);
      }),
    );
    const activateMs = performance.now() - from;
    await sleep(options.settleMs);
    // Three readings a moment apart, the median: one may fall just before a collection.
    const readings: number[] = [];
    for (let i = 0; i < 3; i += 1, await sleep(300)) readings.push(rssKiB(node.child.pid!));
    const metrics = await scrape(node.url.origin);
    const rssMiB = readings.sort((a, b) => a - b)[1]! / 1024;
    return {
      stored,
      active,
      seedMs: store.seedMs,
      activateMs,
      startRssMiB: started / 1024,
      rssMiB,
      heapUsedMiB: (metrics.get('assistant_relay_nodejs_heap_size_used_bytes') ?? Number.NaN) / 2 ** 20,
      held: metrics.get('assistant_relay_integrations_held') ?? Number.NaN,
      online: metrics.get('assistant_relay_integrations_online') ?? Number.NaN,
    };
  } finally {
    streams.abort();
    if (node !== undefined) await stopServer(node, 10_000);
    await dropSchema(schema);
    const broker = await connectBroker({ url: NATS, namespace: schema, report: () => {} });
    await broker.remove();
    await broker.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Integration `i` made active: its heartbeat, its stream held open, one job through it to completed. */
async function activate(origin: string, store: SeededStore, i: number, signal: AbortSignal): Promise<void> {
  const base = `${origin}/api/v1/assistant/integrations/${integrationIdOf(i)}`;
  const relay = { authorization: `Bearer ${store.relayToken(i)}`, 'content-type': 'application/json' };
  const client = { authorization: `Bearer ${store.clientToken(i)}`, 'content-type': 'application/json' };
  const post = async (url: string, headers: Record<string, string>, body: string | undefined, expect: number) => {
    const answer = await fetch(url, { method: 'POST', headers, ...(body === undefined ? {} : { body }) });
    const text = await answer.text();
    if (answer.status !== expect) throw new Error(`POST ${url} answered ${answer.status}: ${text}`);
    return text;
  };
  await post(`${base}/heartbeat`, relay, HEARTBEAT, 200);
  const stream = await fetch(`${base}/stream`, { headers: { authorization: relay.authorization }, signal });
  if (stream.status !== 200) throw new Error(`the stream of integration ${i} answered ${stream.status}: ${await stream.text()}`);
  const reader = stream.body!.getReader();
  const job_id = randomUUID();
  await post(`${base}/jobs`, client, JSON.stringify({ job_id, ...JOB }), 201);
  const decoder = new TextDecoder();
  for (let text = ''; !text.includes(job_id);) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the stream of integration ${i} ended before its job came`);
    text = (text + decoder.decode(value, { stream: true })).slice(-4_096);
  }
  // Read on, and let go, so that the node's writes to it never wait on the bench.
  void (async () => {
    while (!(await reader.read()).done);
  })().catch(() => {});
  await post(`${base}/jobs/${job_id}/running`, { authorization: relay.authorization }, undefined, 200);
  await post(`${base}/jobs/${job_id}/result`, relay, RESULT, 200);
  const view = await fetch(`${base}/jobs/${job_id}`, { headers: { authorization: client.authorization } });
  const read = (await view.json()) as { state?: string };
  if (read.state !== 'completed') throw new Error(`job ${job_id} of integration ${i} reads ${JSON.stringify(read)}`);
}

/** The node's gauges and counters without labels, by name. */
async function scrape(origin: string): Promise<Map<string, number>> {
  const answer = await fetch(`${origin}/metrics`, { headers: { authorization: `Bearer ${OPERATOR}` } });
  if (answer.status !== 200) throw new Error(`/metrics answered ${answer.status}`);
  const found = new Map<string, number>();
  for (const line of (await answer.text()).split('\n')) {
    const match = /^([a-z_]+) (\S+)$/.exec(line);
    if (match !== null) found.set(match[1]!, Number(match[2]));
  }
  return found;
}

async function dropSchema(schema: string): Promise<void> {
  const db = new pg.Client({ connectionString: POSTGRES });
  await db.connect();
  try {
    await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } catch (error) {
    console.error(`bench: dropping ${schema}: ${(error as Error).message}`);
  } finally {
    await db.end();
  }
}
