/**
 * The integration statechart, model-based (model.ts): each transition driven through a real backend over
 * loopback HTTP, one fresh integration a path: its plugin's heartbeat, heartbeats missed while the clock
 * moves, the operator rotating the client's token or revoking it, the client asking for a key rotation and
 * the plugin answering one; after each step the log must hold the event for the integration, and the
 * operator's view of it its state.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import type { IntegrationEvent } from '../../machines/reasoning/backend-events.js';
import { integrationMachine, integrationState } from '../../machines/reasoning/integration.js';
import { heartbeatOf, serveBackend, type ServedBackend } from '../support/backend.js';
import { SimulatedClock } from '../support/clock.js';
import { request } from '../support/http.js';
import { describeModel, untilLogged } from './model.js';

const OPERATOR = 'model-operator-token-0123456789';
const KEY = 'A'.repeat(43);
const I = { integration_id: 'i' };

const clock = new SimulatedClock();
/** Not the defaults: the model drives an operator's settings (PROTOCOL.md 6e.25). */
const HEARTBEAT_INTERVAL_MS = 5_000;
const MISSED_HEARTBEATS = 2;
let served: ServedBackend;
let admin = '';

beforeAll(async () => {
  served = await serveBackend({
    config: { clock, heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS, missedHeartbeats: MISSED_HEARTBEATS },
    operatorToken: OPERATOR,
  });
  admin = `${served.url}/api/v1/admin/integrations`;
});

afterAll(async () => {
  await served?.stop();
});

interface Integration {
  readonly id: string;
  readonly base: string;
  client: string;
  readonly relay: string;
  /** A rotation the client asked for and the plugin has not answered. */
  rekey: string | undefined;
  readonly seen: Map<string, number>;
}

async function requestRekey(integration: Integration): Promise<void> {
  integration.rekey = randomUUID();
  const answer = await request(`${integration.base}/rekeys`, {
    token: integration.client,
    body: { rekey_id: integration.rekey, kid: 'AAAAAAAAAAAA', client_key: KEY, mac: KEY },
  });
  expect(answer.status).toBe(201);
}

describeModel<Integration, IntegrationEvent>('integration', {
  machine: integrationMachine,
  input: { type: 'integration.created', ...I, provider_kind: 'p', relay_token_digest: 'r', client_token_digest: 'c', at: 1 },
  events: [
    {
      type: 'integration.seen',
      ...I,
      plugin: { name: 'p', version: '1' },
      reasoner: { name: 'builtin' },
      status: 'ready',
      schema_versions: { min: 1, max: 1 },
      envelope_versions: { min: 1, max: 1 },
      at: 4,
    },
    { type: 'integration.offline', ...I, at: 5 },
    { type: 'integration.token_rotated', ...I, role: 'client', token_digest: 'c2', at: 3 },
    { type: 'integration.rekey_requested', ...I, rekey_id: 'k', kid: 'd', client_key: 'c', mac: 'm', at: 6 },
    { type: 'integration.rekey_answered', ...I, rekey_id: 'k', assistant_key: 'a', mac: 'n', at: 7 },
    { type: 'integration.revoked', ...I, at: 8 },
  ] as IntegrationEvent[],
  async start() {
    const answer = await request(admin, { token: OPERATOR, body: {} });
    expect(answer.status).toBe(201);
    const { integration_id, relay_token, client_token } = answer.body as {
      integration_id: string;
      relay_token: string;
      client_token: string;
    };
    return {
      id: integration_id,
      base: `${served.url}/api/v1/assistant/integrations/${integration_id}`,
      client: client_token,
      relay: relay_token,
      rekey: undefined,
      seen: new Map(),
    };
  },
  drivers: {
    'integration.seen': async (integration, from) => {
      // Something new of itself each time, so that a plugin already online is seen again: at most once a status interval (PROTOCOL.md 6e.20).
      if (integrationState(from as never) === 'online') clock.increment(HEARTBEAT_INTERVAL_MS);
      const answer = await request(`${integration.base}/heartbeat`, {
        token: integration.relay,
        body: heartbeatOf({ plugin: { name: 'model', version: `1.0.${integration.seen.get('integration.seen') ?? 0}` } }),
      });
      expect(answer.status).toBe(200);
    },
    // The heartbeats it may miss, missed.
    'integration.offline': async () => clock.increment(MISSED_HEARTBEATS * HEARTBEAT_INTERVAL_MS + 1),
    'integration.token_rotated': async (integration) => {
      const answer = await request(`${admin}/${integration.id}/tokens/client/rotate`, { token: OPERATOR, method: 'POST' });
      expect(answer.status).toBe(200);
      integration.client = (answer.body as { token: string }).token;
    },
    'integration.rekey_requested': requestRekey,
    // The plugin answers the rotation asked for, asking for one first if none waits.
    'integration.rekey_answered': async (integration) => {
      if (integration.rekey === undefined) await requestRekey(integration);
      const answer = await request(`${integration.base}/rekeys/${integration.rekey}`, {
        token: integration.relay,
        body: { assistant_key: KEY, mac: KEY },
      });
      expect(answer.status).toBe(200);
      integration.rekey = undefined;
    },
    'integration.revoked': async (integration) =>
      expect((await request(`${admin}/${integration.id}/revoke`, { token: OPERATOR, method: 'POST' })).status).toBe(200),
  },
  async check(integration, event, to) {
    // An answer's driver may have asked for the rotation first: counted too.
    await untilLogged(
      { db: served.db, name: integration.id, about: (event) => event.integration_id === integration.id },
      event.type,
      integration.seen,
      ['integration.rekey_requested'],
    );
    const listed = (await request(admin, { token: OPERATOR })).body as { integrations: Array<{ integration_id: string; state: string }> };
    expect(
      listed.integrations.find((each) => each.integration_id === integration.id)?.state,
      `integration ${integration.id} after ${event.type}`,
    ).toBe(integrationState(to as never));
  },
});
