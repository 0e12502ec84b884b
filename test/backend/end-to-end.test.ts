/**
 * The reasoning channel end to end, in one process over loopback HTTP: the backend relay, the assistant
 * plugin with the builtin reasoner (standalone, and embedded in an assistant host), and a client: probe
 * the capabilities, run a live analysis and a session summary, and read each result, valid for its purpose.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
// The plugin, the reasoners and the host as an embedder imports them: from the package's entry point.
import { builtinReasoner, createAssistantHost, startPlugin } from '../../index.js';
import { tempDir } from '../support/host.js';
import { probeAnalyseSummarise, serveBackend } from '../support/backend.js';
import { request } from '../support/http.js';

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** A backend relay on loopback with one integration (three nodes, in the cluster projects). */
async function startBackend(dir: string) {
  const served = await serveBackend({ dir });
  stops.push(() => served.stop());
  const integration = await served.backend.integrations.create('assistant-relay');
  if ('refused' in integration) throw new Error(integration.refused.message);
  return { url: served.url, integration };
}

it('a client probes, analyses and summarises through the backend and the plugin, and reads valid results', async () => {
  const dir = tempDir();
  stops.push(async () => rmSync(dir, { recursive: true, force: true }));
  const { url, integration } = await startBackend(dir);
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
  await probeAnalyseSummarise(base, integration.client_token);
});

it('an assistant host given a backend serves the reasoning channel beside the chat, and stops its plugin on close', async () => {
  const dir = tempDir();
  stops.push(async () => rmSync(dir, { recursive: true, force: true }));
  const { url, integration } = await startBackend(dir);
  const db = join(dir, 'relay.db');
  const host = await createAssistantHost({
    db,
    token: 'chat-token',
    agent: 'echo',
    backend: {
      url,
      integration: integration.integration_id,
      relayToken: integration.relay_token,
      reasoner: builtinReasoner({ providerKind: 'assistant-relay' }),
    },
  });
  stops.push(() => host.close());
  const chat = await host.listen();
  expect((await request(`${chat}/healthz`)).status).toBe(200);
  await probeAnalyseSummarise(`${url}/api/v1/assistant/integrations/${integration.integration_id}`, integration.client_token);
  expect(existsSync(join(dir, 'relay.plugin.db'))).toBe(true);
  await host.close();
  expect(host.plugin!.status().stream).toBe('stopped');
});
