/**
 * The callback rules as a client meets them, over real HTTP: `POST /v1/incoming` refuses a callback the
 * loopback rule excludes or whose lookup takes too long (400, nothing logged), the same rule refuses a
 * delivery at connect time, and an https receiver with a private CA is reached through `callbackCa`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { AssistantHostOptions, DomainEvent } from '../../index.js';
import { Relay, TOKEN, aMoment, stopAll, until } from '../http/fixture.js';
import { SimulatedClock } from '../support/clock.js';
import { post, script } from '../support/http.js';
import { countEvents } from '../support/log.js';
import { Receiver, closeReceivers, tableResolver, testCertificates } from '../support/receiver.js';

afterEach(async () => {
  await stopAll();
  await closeReceivers();
});

const callbackTo = (url: string, taskId = 't1') => ({
  session_id: 's',
  task_id: taskId,
  text: script({ message: 'hi' }),
  callback: { url, token: 'cb-token' },
});

/** Posts a message with a callback to `url` and expects it refused, with the log untouched. */
async function refused(relay: Relay, url: string): Promise<{ code: string; message: string }> {
  const before = countEvents(relay.db);
  const response = await post(relay.url, TOKEN, callbackTo(url));
  expect(response.status).toBe(400);
  expect(countEvents(relay.db)).toBe(before);
  return (response.body as { error: { code: string; message: string } }).error;
}

describe('loopback callbacks on POST /v1/incoming', () => {
  it('on some ports only: others are refused, naming the port and the ports allowed', async () => {
    const receiver = await Receiver.start();
    const relay = await Relay.start({ callbackLoopbackPorts: [receiver.port, [9000, 9100]] });
    expect(await refused(relay, `http://127.0.0.1:9101/cb`)).toEqual({
      code: 'callback_not_allowed',
      message: `http://127.0.0.1:9101 is a loopback address on port 9101, and this host allows loopback callbacks on ports ${receiver.port}, 9000-9100 only`,
    });
    expect((await refused(relay, 'http://localhost/cb')).message).toMatch(/on port 80, /);
    expect((await post(relay.url, TOKEN, callbackTo(`${receiver.url}/cb`))).status).toBe(202);
    await receiver.received();
    expect(receiver.requests).toMatchObject([{ url: '/cb/tasks/t1' }]);
  });

  it('off: every loopback URL is refused unless the allowlist names its origin', async () => {
    const receiver = await Receiver.start();
    const relay = await Relay.start({ callbackLoopback: false, callbackAllowlist: [receiver.url] });
    for (const url of ['http://127.0.0.1:9000', 'http://localhost:9000', 'http://[::1]:9000', 'http://2130706433:9000']) {
      expect(await refused(relay, url)).toEqual({
        code: 'callback_not_allowed',
        message: expect.stringMatching(/is a loopback address, and this host allows no loopback callbacks \(only allowlisted origins\)$/),
      });
    }
    expect((await post(relay.url, TOKEN, callbackTo(receiver.url))).status).toBe(202);
    await receiver.received();
  });

  it("refuses an embedder's bad ports when the host is created", async () => {
    await expect(Relay.start({ callbackLoopbackPorts: [[9100, 9000]] })).rejects.toThrow(/runs backwards/);
    await expect(Relay.start({ callbackLoopback: false, callbackLoopbackPorts: [8080] })).rejects.toThrow(/loopback callbacks are off/);
  });
});

describe('loopback callbacks at connect time', () => {
  type Abandoned = Extract<DomainEvent, { type: 'delivery.abandoned' }>;

  it.each<[string, Partial<AssistantHostOptions>, string]>([
    ['off', { callbackLoopback: false }, 'loopback_off'],
    ['on other ports', { callbackLoopbackPorts: [9] }, 'loopback_port'],
  ])(
    '%s: a name that resolves to loopback only by the attempt is abandoned, and nothing reaches the receiver',
    async (_label, loopback, reason) => {
      const receiver = await Receiver.start();
      const origin = `http://cb.example.test:${receiver.port}`;
      // Not resolving yet on POST /v1/incoming (accepted, to be looked up again), then the receiver's address.
      const resolve = tableResolver({ 'cb.example.test': { sequence: [[], ['127.0.0.1']] } });
      const relay = await Relay.start({ ...loopback, callbackAllowlist: [origin], resolve });
      expect((await post(relay.url, TOKEN, callbackTo(`${origin}/cb`))).status).toBe(202);
      await until(() => relay.events.some((e) => e.type === 'delivery.abandoned'), 'the delivery abandoned');
      const abandoned = relay.events.find((e): e is Abandoned => e.type === 'delivery.abandoned');
      expect(abandoned).toMatchObject({ reason: 'permanent', attempts: 1, outcome: `refused: ${reason}` });
      expect(receiver.requests).toEqual([]);
    },
  );
});

describe('a callback lookup that does not answer', () => {
  const silent = () => new Promise<never>(() => {});

  it("answers 400 callback_lookup_timeout at the embedder's limit, logging nothing", async () => {
    const relay = await Relay.start({ callbackAllowlist: ['https://slow.example.test'], resolve: silent, callbackLookupTimeoutMs: 100 });
    expect(await refused(relay, 'https://slow.example.test/cb')).toEqual({
      code: 'callback_lookup_timeout',
      message: 'slow.example.test did not resolve within 100 ms',
    });
  });

  it('is bounded by default too: at 2 s', async () => {
    const clock = new SimulatedClock();
    const relay = await Relay.start({ callbackAllowlist: ['https://slow.example.test'], resolve: silent, clock });
    // The host's own timers (retention's first pass) are already there: the lookup's is one more.
    const before = clock.pending;
    let answered = false;
    const answer = refused(relay, 'https://slow.example.test/cb').finally(() => (answered = true));
    await until(() => clock.pending === before + 1, 'the lookup timed');
    clock.increment(1_999);
    await aMoment();
    expect(answered).toBe(false);
    clock.increment(1);
    expect((await answer).code).toBe('callback_lookup_timeout');
  });
});

describe('https callbacks with callbackCa', () => {
  it('delivers to a receiver whose certificate a private CA signed', async () => {
    const tls = await testCertificates();
    const receiver = await Receiver.start(undefined, '127.0.0.1', tls);
    const relay = await Relay.start({ callbackCa: tls.ca });
    expect((await post(relay.url, TOKEN, callbackTo(`https://localhost:${receiver.port}/cb`))).status).toBe(202);
    await until(() => relay.t.host.deliveryStats().succeeded === 1, 'the reply delivered');
    expect(receiver.requests.map((r) => [r.url, JSON.parse(r.body)])).toEqual([
      ['/cb/tasks/t1', { session_id: 's', status: 'message', message_id: expect.any(String), reply_text: 'hi' }],
    ]);
  });
});
