/**
 * Attacks on pairing (issue 23, parts 2 and 5), over real HTTP on loopback, each attacker from its own
 * source address (127.0.0.2, 127.0.0.3, … are this machine too): the routes that need no token must not
 * let one source take what the others need (the open pairings, the joins), nor churn pairings into the
 * log without end, nor make integrations where the operator allows pairing only with a ticket; and a
 * client token issued before the assistant's confirmation is void if the pairing never completes. Each
 * refusal is coded, a 429 says when to try again, and a refused request appends nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { sourceOf } from '../../protocol/ip-address.js';
import { AssistantPairing, ClientPairing, crockfordRandom } from '../../protocol/index.js';
import { serveBackend, type ServeOptions, type ServedBackend } from '../support/backend.js';
import { SimulatedClock } from '../support/clock.js';
import { request, type JsonResponse } from '../support/http.js';
import { countBackendEvents } from '../support/log.js';

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

async function served(options: ServeOptions = {}): Promise<ServedBackend> {
  const backend = await serveBackend(options);
  stops.push(() => backend.stop());
  return backend;
}

const OPERATOR = 'operator-token-of-the-hostile-tests';

/** A source: requests to the backend's pairing routes that leave from `address`. */
function source(url: string, address: string) {
  const at = (path: string) => `${url}/api/v1/pairings${path}`;
  return {
    start: (body: Record<string, unknown> = {}) => request(at(''), { body, from: address }),
    join: (handle: string) => request(at('/join'), { body: { handle }, from: address }),
    step: (pairingId: string, step: string, token: string, body: unknown) =>
      request(at(`/${pairingId}/${step}`), { token, body, from: address }),
  };
}

type Source = ReturnType<typeof source>;

function expectRefused(answer: JsonResponse, status: number, code: string): void {
  expect([answer.status, (answer.body as { error?: { code?: string } } | undefined)?.error?.code]).toEqual([status, code]);
}

/** A 429 with its code and a `Retry-After` of whole seconds, at most `atMost`. */
function expectLimited(answer: JsonResponse, code: string, atMost: number): number {
  expectRefused(answer, 429, code);
  const seconds = Number(answer.headers.get('retry-after'));
  expect(seconds).toBeGreaterThan(0);
  expect(seconds).toBeLessThanOrEqual(atMost);
  return seconds;
}

/**
 * A pairing both of whose sides are `from` and `to`, by hand, as far as the client's confirmation: what
 * an attacker does to make integrations (or a client holds when the assistant has not confirmed yet).
 */
async function upToClientConfirm(from: Source, to: Source) {
  const started = (await from.start()).body as { pairing_id: string; handle: string; pairing_token: string };
  const joined = (await to.join(started.handle)).body as { pairing_token: string };
  const code = crockfordRandom(15);
  const versions = { schema_version: 1, envelope_version: 1 };
  const client = new ClientPairing(started.pairing_id, code, versions);
  const assistant = new AssistantPairing(started.pairing_id, code, versions);
  const step = async (side: Source, name: string, token: string, body: unknown) => {
    const answer = await side.step(started.pairing_id, name, token, body);
    expect(answer.status, `${name}: ${answer.text}`).toBe(200);
    return answer.body as Record<string, string>;
  };
  await step(to, 'commit', joined.pairing_token, { commitment: assistant.commitment() });
  const client_key = client.clientKey(assistant.commitment());
  await step(from, 'client-key', started.pairing_token, { client_key });
  const revealed = assistant.reveal(client_key);
  await step(to, 'reveal', joined.pairing_token, { assistant_key: revealed.assistant_key, nonce: revealed.nonce });
  const { confirmation } = client.reveal(revealed.assistant_key, revealed.nonce);
  const { client_token } = await step(from, 'client-confirm', started.pairing_token, { confirmation });
  return {
    pairing_id: started.pairing_id,
    client: started.pairing_token,
    assistant: joined.pairing_token,
    client_token: client_token!,
    confirmed: assistant.confirm(confirmation).confirmation,
  };
}

describe('the source a request counts against', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    // Every address of one host's /64 is the same source; the next /64 is another.
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff:ffff:ffff:fffe', '2001:db8:1:2::/64'],
    ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
    ['::1', '::/64'],
    [undefined, 'unknown'],
    ['not an address', 'unknown'],
  ])('%s is %s', (ip, source) => {
    expect(sourceOf(ip)).toBe(source);
  });
});

describe('pairing against hostile sources', () => {
  it("one source holding its limit of open pairings does not stop another source's start", async () => {
    const { url, db } = await served();
    const attacker = source(url, '127.0.0.2');
    for (let i = 0; i < 8; i += 1) expect((await attacker.start()).status).toBe(201);
    const before = await countBackendEvents(db);
    // Its open pairings expire 10 minutes after they started: that is when it may try again.
    expectLimited(await attacker.start(), 'too_many_pairings', 600);
    expect(await countBackendEvents(db)).toBe(before);
    expect((await source(url, '127.0.0.3').start()).status).toBe(201);
  });

  it('the open pairings of all sources are bounded, far above what one source may hold', async () => {
    const { url } = await served({ config: { pairingLimits: { openPerSource: 2, open: 5 } } });
    for (const address of ['127.0.0.2', '127.0.0.3'])
      for (let i = 0; i < 2; i += 1) expect((await source(url, address).start()).status).toBe(201);
    const last = source(url, '127.0.0.4');
    expect((await last.start()).status).toBe(201);
    const full = await last.start();
    expectLimited(full, 'too_many_pairings', 600);
    expect((full.body as { error: { message: string } }).error.message).toMatch(/the backend holds the most open pairings/);
  });

  it('ten joins with unknown handles from one source do not lock out a correct join from another', async () => {
    const { url, db } = await served();
    const guesser = source(url, '127.0.0.2');
    for (let i = 0; i < 10; i += 1) expectRefused(await guesser.join(`0000${i}`), 404, 'pairing_not_found');
    const before = await countBackendEvents(db);
    expectLimited(await guesser.join('00010'), 'too_many_attempts', 60);
    // Even a handle that names a pairing: the guesser is held off, whatever it sends.
    const client = source(url, '127.0.0.3');
    const started = (await client.start()).body as { handle: string };
    expectLimited(await guesser.join(started.handle), 'too_many_attempts', 60);
    expect(await countBackendEvents(db)).toBe(before + 1);
    expect((await source(url, '127.0.0.4').join(started.handle)).status).toBe(200);
  });

  it('start churn from one source is rate-bounded with 429 and Retry-After, and so is what it appends', async () => {
    const { url, db } = await served();
    const churner = source(url, '127.0.0.2');
    const before = await countBackendEvents(db);
    for (let i = 0; i < 10; i += 1) {
      const started = (await churner.start()).body as { pairing_id: string; pairing_token: string };
      expect((await churner.step(started.pairing_id, 'abort', started.pairing_token, { reason: 'churn' })).status).toBe(200);
    }
    // Ten starts in ten minutes: the first leaves the window ten minutes after it came.
    expectLimited(await churner.start(), 'too_many_pairing_starts', 600);
    expect(await countBackendEvents(db)).toBe(before + 20);
    expect((await source(url, '127.0.0.3').start()).status).toBe(201);
  });

  it('self-pairing from one source under the open policy makes at most its starts of integrations', async () => {
    const { url, backend } = await served({ config: { pairingLimits: { startsPerSource: 3 } } });
    const [client, assistant] = [source(url, '127.0.0.2'), source(url, '127.0.0.2')];
    for (let i = 0; i < 3; i += 1) {
      const paired = await upToClientConfirm(client, assistant);
      expect(
        (await assistant.step(paired.pairing_id, 'assistant-confirm', paired.assistant, { confirmation: paired.confirmed })).status,
      ).toBe(200);
    }
    expectLimited(await client.start(), 'too_many_pairing_starts', 600);
    expect(await backend.committedIntegrations()).toHaveLength(3);
  });

  it('with the ticket policy, a start needs a valid ticket, and a ticket works once', async () => {
    const clock = new SimulatedClock();
    const { url, db, backend } = await served({
      pairing: 'ticket',
      operatorToken: OPERATOR,
      config: { clock, pairingLimits: { tickets: 2 } },
    });
    const stranger = source(url, '127.0.0.2');
    const tickets = `${url}/api/v1/admin/pairing-tickets`;
    const issue = async (body: unknown = {}) => {
      const answer = await request(tickets, { token: OPERATOR, body });
      expect(answer.status, answer.text).toBe(201);
      return answer.body as { ticket: string; expires_at: string };
    };
    const before = await countBackendEvents(db);
    expectRefused(await stranger.start(), 403, 'pairing_ticket_required');
    expectRefused(await stranger.start({ ticket: 'made-up-ticket' }), 403, 'pairing_ticket_invalid');
    expectRefused(await request(tickets, { body: {} }), 401, 'unauthorized');
    expect(await countBackendEvents(db)).toBe(before);

    const first = await issue();
    expect(Date.parse(first.expires_at) - clock.now()).toBe(24 * 60 * 60_000);
    expect((await stranger.start({ ticket: first.ticket })).status).toBe(201);
    expectRefused(await source(url, '127.0.0.3').start({ ticket: first.ticket }), 403, 'pairing_ticket_invalid');

    // Unused tickets are bounded; one expires, and is then worth nothing.
    const short = await issue({ ttl_ms: 60_000 });
    await issue();
    expectLimited(await request(tickets, { token: OPERATOR, body: {} }), 'too_many_tickets', 60);
    clock.increment(60_000);
    expectRefused(await stranger.start({ ticket: short.ticket }), 403, 'pairing_ticket_invalid');
    expect((await request(tickets, { token: OPERATOR, body: {} })).status).toBe(201);
    expectRefused(await request(tickets, { token: OPERATOR, body: { ttl_ms: 1_000 } }), 400, 'invalid_request');
    expect(await backend.committedIntegrations()).toEqual([]);
  });

  describe('a client token issued before the assistant confirmed', () => {
    it('is refused once the pairing aborted, and never becomes valid', async () => {
      const { url, backend } = await served({ operatorToken: OPERATOR });
      const [client, assistant] = [source(url, '127.0.0.2'), source(url, '127.0.0.3')];
      const paired = await upToClientConfirm(client, assistant);
      // The person at the assistant's side saw another string.
      expect((await assistant.step(paired.pairing_id, 'abort', paired.assistant, { reason: 'sas_rejected: they differ' })).status).toBe(
        200,
      );
      expectRefused(
        await assistant.step(paired.pairing_id, 'assistant-confirm', paired.assistant, { confirmation: paired.confirmed }),
        410,
        'pairing_ended',
      );
      expectRefused(
        await client.step(paired.pairing_id, 'client-confirm', paired.client, { confirmation: paired.confirmed }),
        410,
        'pairing_ended',
      );
      await expectVoid(url, backend, paired.client_token);
    });

    it('is refused once the pairing expired, and never becomes valid', async () => {
      const clock = new SimulatedClock();
      const { url, backend } = await served({ operatorToken: OPERATOR, config: { clock } });
      const [client, assistant] = [source(url, '127.0.0.2'), source(url, '127.0.0.3')];
      const paired = await upToClientConfirm(client, assistant);
      clock.increment(10 * 60_000);
      expectRefused(
        await assistant.step(paired.pairing_id, 'assistant-confirm', paired.assistant, { confirmation: paired.confirmed }),
        410,
        'pairing_ended',
      );
      await expectVoid(url, backend, paired.client_token);
    });
  });
});

/** No integration came of the pairing, and the token opens none: not one the operator made either. */
async function expectVoid(url: string, backend: ServedBackend['backend'], token: string): Promise<void> {
  expect(await backend.committedIntegrations()).toEqual([]);
  const made = (await request(`${url}/api/v1/admin/integrations`, { token: OPERATOR, body: {} })).body as { integration_id: string };
  const base = `${url}/api/v1/assistant/integrations/${made.integration_id}`;
  expectRefused(await request(base, { token }), 401, 'unauthorized');
  expectRefused(
    await request(`${base}/jobs`, { token, body: { job_id: crypto.randomUUID(), purpose: 'capability_probe', payload: {} } }),
    401,
    'unauthorized',
  );
}
