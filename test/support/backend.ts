/**
 * Reasoning-channel fixtures shared by the backend's tests. `serveBackend` is one node on an SQLite log;
 * or, with ASSISTANT_RELAY_TEST_BACKEND=cluster (the `cluster` test projects), three nodes on a shared
 * PostgreSQL schema of the test's own and the suites' broker namespace (ASSISTANT_RELAY_TEST_BROKER: nats or redis)
 * behind a balancer that sends each request to the next node (and names the client's address in
 * `X-Forwarded-For`, which the nodes trust), so that the same suites prove three nodes behave as one.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { createBackendRelay, type BackendRelay } from '../../adapters/backend/relay.js';
import { startBalancer } from './balancer.js';
import { CLUSTER_NAMESPACE, NATS_URL, REDIS_URL } from './brokers.js';
import { POSTGRES_URL, testSchema } from './postgres.js';
import { verifyLogFile } from './verify-log.js';
import type { ReasoningEngine } from '../../engine/reasoning/engine.js';
import type { BackendRelayConfig } from '../../adapters/backend/seams.js';
import { PURPOSES, type Heartbeat, type JobPurpose } from '../../protocol/index.js';
import { tempDir } from './host.js';
import { request } from './http.js';

export interface ServedBackend {
  readonly url: string;
  readonly dir: string;
  /** The SQLite log; for a cluster, `{postgres url}#{schema}` (`countBackendEvents` reads either). */
  readonly db: string;
  /** The engine (of the first node, in a cluster). */
  readonly backend: ReasoningEngine;
  /** A cluster's broker and its namespace. */
  readonly broker?: { readonly url: string; readonly namespace: string };
  /** Stops it as a backend stops (late requests get 503); the folder stays unless `remove`. */
  stop(options?: { readonly remove?: boolean }): Promise<void>;
}

export interface ServeOptions {
  readonly dir?: string;
  readonly config?: BackendRelayConfig;
  readonly operatorToken?: string;
  readonly corsOrigins?: readonly string[];
  /** Who may pair: `open` unless a test says otherwise (the suites pair freely; the default of a real backend is `ticket`). */
  readonly pairing?: 'open' | 'ticket';
}

/** A backend engine on a real SQLite log in `dir`, served over loopback HTTP; or a cluster of three (above). */
export async function serveBackend(options: ServeOptions = {}): Promise<ServedBackend> {
  if (process.env.ASSISTANT_RELAY_TEST_BACKEND === 'cluster') return serveCluster(options);
  const dir = options.dir ?? tempDir();
  const db = join(dir, 'backend.db');
  const relay = await createBackendRelay({
    db,
    pairing: options.pairing ?? 'open',
    ...(options.config === undefined ? {} : { config: options.config }),
    ...(options.operatorToken === undefined ? {} : { operatorToken: options.operatorToken }),
    ...(options.corsOrigins === undefined ? {} : { corsOrigins: options.corsOrigins }),
  });
  const url = await relay.listen();
  return {
    url,
    dir,
    db,
    backend: relay.backend,
    async stop({ remove = true } = {}) {
      await relay.close();
      if (!remove) return;
      await verifyLogFile(db);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const schemas = new Map<string, string>();

/** Three nodes on a shared store and broker behind a balancer. */
export async function serveCluster(
  options: ServeOptions & { readonly nodes?: number; readonly broker?: 'nats' | 'redis'; readonly namespace?: string } = {},
): Promise<ServedBackend> {
  const dir = options.dir ?? tempDir();
  // The same folder is the same cluster: serving it again is a restart of every node.
  const schema = schemas.get(dir) ?? testSchema();
  schemas.set(dir, schema);
  const namespace = options.namespace ?? CLUSTER_NAMESPACE;
  const brokerUrl = (options.broker ?? process.env.ASSISTANT_RELAY_TEST_BROKER ?? 'nats') === 'redis' ? REDIS_URL : NATS_URL;
  const nodes: BackendRelay[] = [];
  for (let i = 0; i < (options.nodes ?? 3); i += 1) {
    nodes.push(
      await createBackendRelay({
        store: { url: POSTGRES_URL, schema },
        broker: { url: brokerUrl, namespace },
        pairing: options.pairing ?? 'open',
        // The balancer on loopback says whose request it forwards: the pairing limits count the client's address.
        trustProxy: ['loopback'],
        ...(options.config === undefined ? {} : { config: options.config }),
        ...(options.operatorToken === undefined ? {} : { operatorToken: options.operatorToken }),
        ...(options.corsOrigins === undefined ? {} : { corsOrigins: options.corsOrigins }),
      }),
    );
  }
  const urls = await Promise.all(nodes.map((node) => node.listen()));
  const balancer = await startBalancer(() => urls);
  return {
    url: balancer.url,
    dir,
    db: `${POSTGRES_URL}#${schema}`,
    backend: nodes[0]!.backend,
    broker: { url: brokerUrl, namespace },
    async stop({ remove = true } = {}) {
      await Promise.all(nodes.map((node) => node.close()));
      await balancer.close();
      if (!remove) return;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A heartbeat an admitted plugin would send. */

export function heartbeatOf(over: Partial<Heartbeat> = {}): Heartbeat {
  return {
    plugin: { name: 'test-plugin', version: '1.0.0' },
    provider_kind: 'assistant-relay',
    schema_versions: { min: 1, max: 1 },
    envelope_versions: { min: 1, max: 1 },
    status: 'ready',
    running_job_ids: [],
    reasoner: { name: 'builtin' },
    ...over,
  };
}

const TRANSCRIPT = [
  { speaker: 'Ana', text: 'Our budget is 40,000 for the year.' },
  { speaker: 'Ben', text: 'What is the timeline for rollout?' },
  { speaker: 'Ana', text: 'We decided to start in March. I will send the contract.' },
];

const PAYLOADS: Record<JobPurpose, Record<string, unknown>> = {
  capability_probe: {},
  live_analysis: { session_id: 'call-1', transcript: TRANSCRIPT },
  session_summary: { session_id: 'call-1', transcript: TRANSCRIPT },
};

/**
 * What a client does in issue 9's full run, against `base` (`…/integrations/{id}`): probe the plugin's
 * capabilities, run a live analysis and a session summary, and read each result until it is there,
 * checking that it is valid for its purpose.
 */
export async function probeAnalyseSummarise(base: string, clientToken: string): Promise<void> {
  for (const purpose of ['capability_probe', 'live_analysis', 'session_summary'] as const) {
    const job_id = randomUUID();
    expect((await request(`${base}/jobs`, { token: clientToken, body: { job_id, purpose, payload: PAYLOADS[purpose] } })).status).toBe(201);
    let view: Record<string, unknown> = {};
    for (
      const since = Date.now();
      view.state !== 'completed' && view.state !== 'failed';
      await new Promise((resolve) => setTimeout(resolve, 20))
    ) {
      if (Date.now() - since > 15_000) throw new Error(`the ${purpose} job is still ${String(view.state)}`);
      view = (await request(`${base}/jobs/${job_id}`, { token: clientToken })).body as Record<string, unknown>;
    }
    expect(view).toMatchObject({ state: 'completed', purpose });
    expect(PURPOSES[purpose].result.safeParse(view.result).success).toBe(true);
  }
}

/** A capability profile (2.4, 6.5) a plugin's probe may answer with. */
export const CAPABILITY_PROFILE = {
  profile_version: 1,
  provider_kind: 'assistant-relay',
  skills: [],
  models: [],
  tools: [],
  limits: { max_concurrent_jobs: 1, max_payload_bytes: 1_000 },
  schema_versions: { min: 1, max: 1 },
  envelope_versions: { min: 1, max: 1 },
};

/** An envelope of the right shape that no key opens: what the backend, which holds none, must take as it is. */
export const SHAPED_ENVELOPE = { kid: 'AAAAAAAAAAAA', nonce: 'A'.repeat(32), ciphertext: 'A'.repeat(22) };
