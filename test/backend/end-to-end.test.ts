/**
 * The reasoning channel end to end, in one process over loopback HTTP: the backend relay, the assistant
 * plugin with the builtin reasoner, and a client: probe the capabilities, run a live analysis and a
 * session summary, and read each result, valid for its purpose.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { buildBackendServer } from '../../src/adapters/backend/server.js';
import { HTTP_LIMITS } from '../../src/adapters/http/limits.js';
import { startPlugin } from '../../src/adapters/plugin/index.js';
import { builtinReasoner } from '../../src/adapters/reasoners/index.js';
import { Backend } from '../../src/engine/backend/backend.js';
import { backendStreamOf, type BackendEvent } from '../../src/machines/backend-events.js';
import { PURPOSES, type JobPurpose } from '../../src/protocol/index.js';
import { EventLog } from '../../src/storage/event-log.js';
import { sleep } from '../http/fixture.js';
import { tempDir } from '../support/host.js';
import { request } from '../support/http.js';

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

it('a client probes, analyses and summarises through the backend and the plugin, and reads valid results', async () => {
  const dir = tempDir();
  stops.push(async () => rmSync(dir, { recursive: true, force: true }));
  const log = EventLog.open<BackendEvent>({ path: join(dir, 'backend.db'), streamOf: backendStreamOf });
  const backend = await Backend.start(log);
  const app = await buildBackendServer(backend, { limits: HTTP_LIMITS });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  stops.push(async () => {
    const closing = app.close();
    await backend.close();
    await closing;
    await log.close();
  });
  const integration = await backend.integrations.create('assistant-relay');
  if ('refused' in integration) throw new Error(integration.refused.message);

  const plugin = await startPlugin({
    backendUrl: url,
    integrationId: integration.integration_id,
    relayToken: integration.relay_token,
    reasoner: builtinReasoner({ providerKind: 'assistant-relay' }),
    db: join(dir, 'plugin.db'),
    providerKind: 'assistant-relay',
  });
  stops.push(() => plugin.stop());

  const base = `${url}/api/v1/assistant/integrations/${integration.integration_id}`;
  const transcript = [
    { speaker: 'Ana', text: 'Our budget is 40,000 for the year.' },
    { speaker: 'Ben', text: 'What is the timeline for rollout?' },
    { speaker: 'Ana', text: 'We decided to start in March. I will send the contract.' },
  ];
  const payloads: Record<JobPurpose, Record<string, unknown>> = {
    capability_probe: {},
    live_analysis: { session_id: 'call-1', transcript },
    session_summary: { session_id: 'call-1', transcript },
  };
  for (const purpose of ['capability_probe', 'live_analysis', 'session_summary'] as const) {
    const job_id = randomUUID();
    const created = await request(`${base}/jobs`, { token: integration.client_token, body: { job_id, purpose, payload: payloads[purpose] } });
    expect(created.status).toBe(201);
    let view: Record<string, unknown> = {};
    for (const started = Date.now(); view.state !== 'completed' && view.state !== 'failed'; await sleep(20)) {
      if (Date.now() - started > 10_000) throw new Error(`the ${purpose} job is still ${String(view.state)}`);
      view = (await request(`${base}/jobs/${job_id}`, { token: integration.client_token })).body as Record<string, unknown>;
    }
    expect(view).toMatchObject({ state: 'completed', purpose });
    expect(PURPOSES[purpose].result.safeParse(view.result).success).toBe(true);
  }
});
