/**
 * Pairing through a real backend over loopback HTTP (issue 10): both sides as the client library runs
 * them, and everything that must stop a pairing: a wrong code, a relay that swaps keys in transit (the
 * test plays it), messages out of order or from the wrong side, expiry, guessing handles, bad bodies;
 * the limits of each source and the operator's tickets, which on three nodes must hold for the service.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { PairingFailed, pairAsAssistant, pairAsClient } from '../../adapters/client/pairing.js';
import {
  AssistantPairing,
  ClientPairing,
  crockfordRandom,
  formatCode,
  newKeyPair,
  open,
  parseCode,
  seal,
  toBase64Url,
} from '../../protocol/index.js';
import { serveBackend, type ServedBackend } from '../support/backend.js';
import { request } from '../support/http.js';
import { countBackendEvents } from '../support/log.js';

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

async function served(config: Parameters<typeof serveBackend>[0] = {}): Promise<ServedBackend> {
  const backend = await serveBackend(config);
  stops.push(() => backend.stop());
  return backend;
}

/** Both sides at once; the assistant's is handed the code the client shows (or `mangle` of it). */
async function pairBoth(url: string, mangle: (code: string) => string = (code) => code, assistantUrl = url) {
  let code: (value: string) => void;
  const shown = new Promise<string>((resolve) => (code = resolve));
  const sas: { client?: string; assistant?: string } = {};
  // Each side's person says yes to whatever string it shows: the sides' own checks are what these tests are about.
  const client = pairAsClient({
    backend: url,
    providerKind: 'assistant-relay',
    pollMs: 20,
    onCode: (value) => code(value),
    confirmSas: (value) => Boolean((sas.client = value)),
  });
  const assistant = shown.then((value) =>
    pairAsAssistant({ backend: assistantUrl, code: mangle(value), pollMs: 20, confirmSas: (value) => Boolean((sas.assistant = value)) }),
  );
  const [c, a] = await Promise.allSettled([client, assistant]);
  return { client: c, assistant: a, sas };
}

const start = (url: string, body: unknown = {}) => request(`${url}/api/v1/pairings`, { body });

describe('pairing through the backend', () => {
  it('pairs: the same SAS on both sides, the same keys, and tokens that work for the new integration', async () => {
    const { url, backend } = await served();
    const { client, assistant, sas } = await pairBoth(url);
    expect(client.status).toBe('fulfilled');
    expect(assistant.status).toBe('fulfilled');
    const c = (client as PromiseFulfilledResult<Awaited<ReturnType<typeof pairAsClient>>>).value;
    const a = (assistant as PromiseFulfilledResult<Awaited<ReturnType<typeof pairAsAssistant>>>).value;
    expect(sas.client).toMatch(/^\d{3} \d{3}$/);
    expect(sas.client).toBe(sas.assistant);
    expect(c.keys).toEqual(a.keys);
    expect(c.integration_id).toBe(a.integration_id);
    const base = `${url}/api/v1/assistant/integrations/${c.integration_id}`;
    expect((await request(base, { token: c.token })).status).toBe(200);
    expect(
      (
        await request(`${base}/heartbeat`, {
          token: a.token,
          body: {
            plugin: { name: 'p', version: '1' },
            provider_kind: 'assistant-relay',
            schema_versions: { min: 1, max: 1 },
            envelope_versions: { min: 1, max: 1 },
            status: 'ready',
            running_job_ids: [],
            reasoner: { name: 'builtin' },
          },
        })
      ).status,
    ).toBe(200);
    // What the backend keeps: the integration with the two public keys, never a secret of the pairing
    // (on three nodes, this node holds it once asked: it was born where the pairing completed).
    await backend.caughtUp(c.integration_id);
    const integration = backend.integrations.integration(c.integration_id)!;
    expect(integration.context.provider_kind).toBe('assistant-relay');
    // An envelope one side seals, the other opens.
    expect(integration.context.paired).toBe(true);
    const binding = {
      direction: 'client_to_assistant' as const,
      integration_id: c.integration_id,
      job_id: crypto.randomUUID(),
      purpose: 'live_analysis',
      deadline_at: new Date().toISOString(),
      response_schema: {},
      schema_version: 1,
      envelope_version: 1,
    };
    expect(open(() => a.keys, binding, seal(c.keys, binding, { hello: 'there' }))).toEqual({ hello: 'there' });
  });

  it('a wrong pairing code: the assistant aborts, the client hears why, and no integration is made', async () => {
    const { url, backend } = await served();
    const { client, assistant } = await pairBoth(url, (code) =>
      formatCode({ handle: parseCode(code)!.handle, secret: crockfordRandom(15) }),
    );
    expect(assistant).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ code: 'confirmation_failed' }) });
    expect(client).toMatchObject({
      status: 'rejected',
      reason: expect.objectContaining({
        code: 'pairing_aborted',
        message: expect.stringMatching(/assistant's side aborted.*confirmation_failed/),
      }),
    });
    expect(await backend.committedIntegrations()).toEqual([]);
  });

  it("a relay that swaps the client's public key in transit: the SAS differ and the pairing is aborted", async () => {
    const { url, backend } = await served();
    // The relay, played here: it forwards everything, but shows the assistant a key of its own for the client's.
    const forged = toBase64Url(newKeyPair().publicKey);
    const relay = await mitmRelay(url, (answer) =>
      typeof answer === 'object' && answer !== null && 'client_key' in answer ? { ...answer, client_key: forged } : answer,
    );
    stops.push(() => new Promise((resolve) => relay.server.close(() => resolve())));
    const { client, assistant, sas } = await pairBoth(url, (code) => code, relay.url);
    expect(sas.assistant).toBeDefined();
    expect(sas.client).not.toBe(sas.assistant);
    expect(assistant).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ code: 'confirmation_failed' }) });
    expect(client).toMatchObject({ status: 'rejected', reason: expect.any(PairingFailed) });
    expect(await backend.committedIntegrations()).toEqual([]);
  });

  it('takes each message only at its step and from its side; the same again is answered, another is a conflict', async () => {
    const { url, db } = await served();
    const started = (await start(url)).body as { pairing_id: string; handle: string; pairing_token: string };
    const at = (step: string) => `${url}/api/v1/pairings/${started.pairing_id}/${step}`;
    const key = toBase64Url(newKeyPair().publicKey);
    expect((await request(at('client-key'), { token: started.pairing_token, body: { client_key: key } })).body).toMatchObject({
      error: { code: 'pairing_out_of_order' },
    });
    const joined = (await request(`${url}/api/v1/pairings/join`, { body: { handle: started.handle } })).body as { pairing_token: string };
    expect((await request(`${url}/api/v1/pairings/join`, { body: { handle: started.handle } })).body).toMatchObject({
      error: { code: 'pairing_conflict' },
    });
    const side = new AssistantPairing(started.pairing_id, crockfordRandom(15), { schema_version: 1, envelope_version: 1 });
    // The client cannot commit for the assistant, nor a stranger read the pairing.
    expect((await request(at('commit'), { token: started.pairing_token, body: { commitment: side.commitment() } })).status).toBe(401);
    expect((await request(`${url}/api/v1/pairings/${started.pairing_id}`, { token: 'not-a-token' })).status).toBe(401);
    expect((await request(at('commit'), { token: joined.pairing_token, body: { commitment: side.commitment() } })).status).toBe(200);
    expect((await request(at('commit'), { token: joined.pairing_token, body: { commitment: side.commitment() } })).status).toBe(200);
    expect(
      (await request(at('commit'), { token: joined.pairing_token, body: { commitment: toBase64Url(new Uint8Array(32)) } })).body,
    ).toMatchObject({ error: { code: 'pairing_conflict' } });
    const events = await countBackendEvents(db);
    for (const [body, what] of [
      [{ client_key: 'short' }, 'a short key'],
      [{ client_key: `${key.slice(0, 42)}B` }, 'stray bits'],
      [{ client_key: key, extra: 1 }, 'an unknown field'],
      ['not json', 'not JSON'],
    ] as const) {
      const answer =
        typeof body === 'string'
          ? await request(at('client-key'), {
              token: started.pairing_token,
              rawBody: body,
              headers: { 'content-type': 'application/json' },
            })
          : await request(at('client-key'), { token: started.pairing_token, body });
      expect(answer.status, what).toBe(400);
    }
    expect((await request(`${url}/api/v1/pairings/not-a-uuid`, { token: started.pairing_token })).body).toMatchObject({
      error: { code: 'invalid_pairing_id' },
    });
    expect(await countBackendEvents(db)).toBe(events);
  });

  it('an open pairing expires: its steps are answered 410 and its handle names nothing', async () => {
    const { url } = await served({ config: { pairingTtlMs: 150 } });
    const started = (await start(url)).body as { pairing_id: string; handle: string; pairing_token: string };
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(
      ((await request(`${url}/api/v1/pairings/${started.pairing_id}`, { token: started.pairing_token })).body as { state: string }).state,
    ).toBe('expired');
    expect((await request(`${url}/api/v1/pairings/join`, { body: { handle: started.handle } })).body).toMatchObject({
      error: { code: 'pairing_not_found' },
    });
    const abort = await request(`${url}/api/v1/pairings/${started.pairing_id}/abort`, {
      token: started.pairing_token,
      body: { reason: 'late' },
    });
    expect([abort.status, abort.body]).toEqual([
      410,
      expect.objectContaining({ error: expect.objectContaining({ code: 'pairing_ended' }) }),
    ]);
  });

  it('limits codes that name no pairing, and open pairings, of a source; refuses a provider that is coming soon', async () => {
    const { url } = await served();
    for (let i = 0; i < 10; i += 1) expect((await request(`${url}/api/v1/pairings/join`, { body: { handle: '00000' } })).status).toBe(404);
    const limited = await request(`${url}/api/v1/pairings/join`, { body: { handle: '00000' } });
    expect([limited.status, (limited.body as { error: { code: string } }).error.code]).toEqual([429, 'too_many_attempts']);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect((await start(url, { provider_kind: 'a2a-bridge' })).body).toMatchObject({
      error: { code: 'provider_refused', message: expect.stringMatching(/coming soon/) },
    });
    for (let i = 0; i < 8; i += 1) expect((await start(url)).status).toBe(201);
    const full = await start(url);
    expect([full.status, full.body]).toEqual([
      429,
      expect.objectContaining({ error: expect.objectContaining({ code: 'too_many_pairings' }) }),
    ]);
    // Until the first of its open pairings expires: 10 minutes.
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThan(590);
  });

  it("the limits are each source's, on every node of the service: one source's misses and open pairings stop no other", async () => {
    const { url } = await served();
    const from = (address: string) => ({
      start: () => request(`${url}/api/v1/pairings`, { body: {}, from: address }),
      join: (handle: string) => request(`${url}/api/v1/pairings/join`, { body: { handle }, from: address }),
    });
    const [greedy, other] = [from('127.0.0.2'), from('127.0.0.3')];
    // On three nodes, consecutive requests meet different nodes: the counts are the service's.
    for (let i = 0; i < 8; i += 1) expect((await greedy.start()).status).toBe(201);
    expect((await greedy.start()).status).toBe(429);
    for (let i = 0; i < 10; i += 1) expect((await greedy.join('00000')).status).toBe(404);
    expect((await greedy.join('00000')).status).toBe(429);
    const started = (await other.start()).body as { handle: string };
    expect((await other.join(started.handle)).status).toBe(200);
  });

  it('with the ticket policy, a ticket the operator issued through one node starts a pairing through another, once', async () => {
    const { url } = await served({ pairing: 'ticket', operatorToken: 'operator-token-of-the-test' });
    const issued = await request(`${url}/api/v1/admin/pairing-tickets`, { token: 'operator-token-of-the-test', body: {} });
    expect(issued.status).toBe(201);
    const { ticket } = issued.body as { ticket: string };
    expect((await start(url)).body).toMatchObject({ error: { code: 'pairing_ticket_required' } });
    expect((await start(url, { ticket })).status).toBe(201);
    expect((await start(url, { ticket })).body).toMatchObject({ error: { code: 'pairing_ticket_invalid' } });
  });

  it('a pairing goes on across a backend restart; a confirmation asked again gets a fresh token and the old one stops working', async () => {
    const first = await served();
    const started = (await start(first.url)).body as { pairing_id: string; handle: string; pairing_token: string };
    await first.stop({ remove: false });
    const second = await served({ dir: first.dir });
    const joined = (await request(`${second.url}/api/v1/pairings/join`, { body: { handle: started.handle } })).body as {
      pairing_token: string;
    };
    // The rest of the pairing, by hand, as the two sides would send it.
    const code = crockfordRandom(15);
    const client = new ClientPairing(started.pairing_id, code, { schema_version: 1, envelope_version: 1 });
    const assistant = new AssistantPairing(started.pairing_id, code, { schema_version: 1, envelope_version: 1 });
    const at = (step: string) => `${second.url}/api/v1/pairings/${started.pairing_id}/${step}`;
    await request(at('commit'), { token: joined.pairing_token, body: { commitment: assistant.commitment() } });
    const client_key = client.clientKey(assistant.commitment());
    await request(at('client-key'), { token: started.pairing_token, body: { client_key } });
    const revealed = assistant.reveal(client_key);
    await request(at('reveal'), { token: joined.pairing_token, body: { assistant_key: revealed.assistant_key, nonce: revealed.nonce } });
    const { confirmation } = client.reveal(revealed.assistant_key, revealed.nonce);
    const firstToken = (
      (await request(at('client-confirm'), { token: started.pairing_token, body: { confirmation } })).body as { client_token: string }
    ).client_token;
    const confirmed = assistant.confirm(confirmation);
    const done = (await request(at('assistant-confirm'), { token: joined.pairing_token, body: { confirmation: confirmed.confirmation } }))
      .body as { integration_id: string };
    const base = `${second.url}/api/v1/assistant/integrations/${done.integration_id}`;
    expect((await request(base, { token: firstToken })).status).toBe(200);
    // Its answer was lost, say: asked again, a fresh token; the first stops working.
    const again = (
      (await request(at('client-confirm'), { token: started.pairing_token, body: { confirmation } })).body as { client_token: string }
    ).client_token;
    expect(again).not.toBe(firstToken);
    expect((await request(base, { token: firstToken })).status).toBe(401);
    expect((await request(base, { token: again })).status).toBe(200);
    // A different confirmation is a conflict, not a token.
    expect(
      (await request(at('client-confirm'), { token: started.pairing_token, body: { confirmation: toBase64Url(new Uint8Array(32)) } })).body,
    ).toMatchObject({ error: { code: 'pairing_conflict' } });
  });
});

/** A relay in the middle: forwards every request to `target`, letting `rewrite` change each JSON answer on its way back. */
async function mitmRelay(target: string, rewrite: (answer: unknown) => unknown): Promise<{ server: Server; url: string }> {
  const read = async (incoming: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  };
  const server = createServer((incoming, outgoing) => {
    void (async () => {
      const text = await read(incoming);
      const body = text === '' ? undefined : text;
      const answer = await fetch(`${target}${incoming.url}`, {
        method: incoming.method!,
        headers: {
          ...(incoming.headers.authorization ? { authorization: incoming.headers.authorization } : {}),
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        ...(body ? { body } : {}),
      });
      outgoing.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
      outgoing.end(JSON.stringify(rewrite(JSON.parse(await answer.text()))));
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return { server, url: `http://127.0.0.1:${address.port}` };
}
