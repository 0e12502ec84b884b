/**
 * The pairing statechart, model-based (model.ts): each transition driven through a real backend over
 * loopback HTTP, one fresh pairing a path, each message sent by the side whose turn it is (the backend
 * checks the order, not the keys, so any well-formed key does), or time passing its expiry; after each
 * step the log must hold the event for the pairing, and the client's view of it its state.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { PAIRING_TTL_MS } from '../../engine/reasoning/pairings.js';
import { pairingMachine, pairingState, type PairingSnapshot } from '../../machines/reasoning/pairing.js';
import type { PairingEvent } from '../../machines/reasoning/pairing-events.js';
import { serveBackend, type ServedBackend } from '../support/backend.js';
import { SimulatedClock } from '../support/clock.js';
import { request } from '../support/http.js';
import { describeModel, untilLogged } from './model.js';

const KEY = 'A'.repeat(43);
const P = { pairing_id: 'p' };

const clock = new SimulatedClock();
let served: ServedBackend;
let pairings = '';

beforeAll(async () => {
  // Every path starts a pairing from this one source: its limits are not what this test is about.
  served = await serveBackend({ config: { clock, pairingLimits: { openPerSource: 100, startsPerSource: 1_000 } } });
  pairings = `${served.url}/api/v1/pairings`;
});

afterAll(async () => {
  await served?.stop();
});

interface Pairing {
  readonly id: string;
  readonly handle: string;
  readonly client: string;
  /** The assistant side's token, once it joined. */
  assistant: string;
  readonly seen: Map<string, number>;
}

async function step(pairing: Pairing, path: string, token: string, body: unknown): Promise<void> {
  const answer = await request(`${pairings}/${pairing.id}/${path}`, { token, body });
  expect(answer.status, `${path}: ${JSON.stringify(answer.body)}`).toBe(200);
}

describeModel<Pairing, PairingEvent>('pairing', {
  machine: pairingMachine,
  input: {
    type: 'pairing.started',
    ...P,
    handle: 'H',
    provider_kind: 'k',
    schema_version: 1,
    envelope_version: 1,
    client_pairing_token_digest: 'c',
    expires_at: 100,
    at: 1,
  },
  events: [
    { type: 'pairing.joined', ...P, assistant_pairing_token_digest: 'a', at: 2 },
    { type: 'pairing.committed', ...P, commitment: 'm', at: 3 },
    { type: 'pairing.client_key_sent', ...P, client_key: 'ck', at: 4 },
    { type: 'pairing.revealed', ...P, assistant_key: 'ak', nonce: 'n', at: 5 },
    { type: 'pairing.client_confirmed', ...P, confirmation: 'cc', client_token_digest: 't', at: 6 },
    { type: 'pairing.completed', ...P, confirmation: 'ac', integration_id: 'i', at: 7 },
    { type: 'pairing.aborted', ...P, by: 'client', reason: 'r', at: 8 },
    { type: 'pairing.expired', ...P, at: 9 },
  ] as PairingEvent[],
  async start() {
    const answer = await request(pairings, { body: {} });
    expect(answer.status).toBe(201);
    const { pairing_id, handle, pairing_token } = answer.body as { pairing_id: string; handle: string; pairing_token: string };
    return { id: pairing_id, handle, client: pairing_token, assistant: '', seen: new Map() };
  },
  drivers: {
    'pairing.joined': async (pairing) => {
      const answer = await request(`${pairings}/join`, { body: { handle: pairing.handle } });
      expect(answer.status).toBe(200);
      pairing.assistant = (answer.body as { pairing_token: string }).pairing_token;
    },
    'pairing.committed': (pairing) => step(pairing, 'commit', pairing.assistant, { commitment: KEY }),
    'pairing.client_key_sent': (pairing) => step(pairing, 'client-key', pairing.client, { client_key: KEY }),
    'pairing.revealed': (pairing) => step(pairing, 'reveal', pairing.assistant, { assistant_key: KEY, nonce: KEY }),
    'pairing.client_confirmed': (pairing) => step(pairing, 'client-confirm', pairing.client, { confirmation: KEY }),
    'pairing.completed': (pairing) => step(pairing, 'assistant-confirm', pairing.assistant, { confirmation: KEY }),
    'pairing.aborted': (pairing) => step(pairing, 'abort', pairing.client, { reason: 'the codes differ' }),
    'pairing.expired': async () => clock.increment(PAIRING_TTL_MS + 1),
  },
  async check(pairing, event, to) {
    await untilLogged({ db: served.db, name: pairing.id, about: (event) => event.pairing_id === pairing.id }, event.type, pairing.seen);
    const view = await request(`${pairings}/${pairing.id}`, { token: pairing.client });
    expect([view.status, (view.body as { state?: string }).state], `pairing ${pairing.id} after ${event.type}`).toEqual([
      200,
      pairingState(to as PairingSnapshot),
    ]);
  },
});
