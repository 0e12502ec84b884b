/**
 * The reasoning channel end to end, in one process over loopback HTTP: the backend relay, the assistant
 * plugin with the builtin reasoner, and a client: probe the capabilities, run a live analysis and a
 * session summary, and read each result, valid for its purpose.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, it } from 'vitest';
import { buildBackendServer } from '../../src/adapters/backend/server.js';
import { HTTP_LIMITS } from '../../src/adapters/http/limits.js';
import { startPlugin } from '../../src/adapters/plugin/index.js';
import { builtinReasoner } from '../../src/adapters/reasoners/index.js';
import { Backend } from '../../src/engine/backend/backend.js';
import { backendStreamOf, type BackendEvent } from '../../src/machines/backend-events.js';
import { EventLog } from '../../src/storage/event-log.js';
import { tempDir } from '../support/host.js';
import { probeAnalyseSummarise } from '../support/backend.js';

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
  await probeAnalyseSummarise(base, integration.client_token);
});
