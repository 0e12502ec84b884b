/**
 * The HTTP callback transport (4.3) against real receivers on loopback: one attempt, reported as a
 * CallbackOutcome. Names resolve only through table resolvers and every receiver listens on loopback, so
 * nothing here can reach beyond this machine, whatever the code under test does.
 */
import { connect, type AddressInfo } from 'node:net';
import { createSecureContext, createServer as createTlsServer } from 'node:tls';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { CallbackOutcome, CallbackRequest } from '../../engine/chat/callback.js';
import { systemClock, type Clock } from '../../engine/core/clock.js';
import { CallbackPolicy, type Resolver } from '../../adapters/callback/policy.js';
import { httpCallbackTransport } from '../../adapters/callback/transport.js';
import { aMoment, until } from '../http/fixture.js';
import { SimulatedClock } from '../support/clock.js';
import {
  Receiver,
  closeReceivers,
  closedPort,
  countClientSockets,
  guardSystemDns,
  hasIPv6Loopback,
  tableResolver,
  testCertificates,
  type Answer,
} from '../support/receiver.js';

const dns = guardSystemDns();
afterAll(dns.restore);
afterEach(async () => {
  await closeReceivers();
  // Every connection went to an address: no name ever reached the system resolver.
  expect(dns.lookups.splice(0)).toEqual([]);
});

const TOKEN = 'cb-token-7f3a9c';
const BODY = JSON.stringify({ session_id: 's', status: 'message', message_id: 'm1', reply_text: 'hi' });
const SESSION_ENDED = '{"ok":true,"ignored":true,"reason":"session_ended"}';
const ipv6 = await hasIPv6Loopback();

interface TransportOptions {
  allowlist?: string[];
  loopback?: boolean;
  loopbackPorts?: number[];
  resolve?: Resolver;
  timeoutMs?: number;
  maxResponseBytes?: number;
  clock?: Clock;
  ca?: string;
}

function transport({
  allowlist = [],
  loopback,
  loopbackPorts,
  resolve = tableResolver({}),
  timeoutMs = 5_000,
  ...rest
}: TransportOptions = {}) {
  // Unknown names fail: no test ever asks real DNS.
  const policy = new CallbackPolicy({
    allowlist,
    resolve,
    ...(loopback === undefined ? {} : { loopback }),
    ...(loopbackPorts === undefined ? {} : { loopbackPorts }),
  });
  return httpCallbackTransport({ policy, timeoutMs, ...rest });
}

function attempt(url: string, overrides: Partial<CallbackRequest> = {}): CallbackRequest {
  return { url, token: TOKEN, task_id: 't1', body: BODY, signal: new AbortController().signal, ...overrides };
}

const answer =
  (status: number, headers: Record<string, string> = {}, body = ''): Answer =>
  (_received, response) => {
    response.writeHead(status, headers).end(body);
  };

const never: Answer = () => {};

describe('a delivered attempt', () => {
  it('POSTs the body to {url}/tasks/{task_id} with the Bearer token', async () => {
    const receiver = await Receiver.start();
    const outcome = await transport().post(attempt(`${receiver.url}/hooks/relay/`, { task_id: 'task:1' }));
    expect(outcome).toEqual({ kind: 'answered', status: 200, sessionEnded: false });
    expect(receiver.requests).toHaveLength(1);
    const [received] = receiver.requests;
    expect(received).toMatchObject({
      method: 'POST',
      url: '/hooks/relay/tasks/task%3A1',
      body: BODY,
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        'user-agent': 'assistant-relay',
        host: `127.0.0.1:${receiver.port}`,
      },
    });
  });

  it('reports a 503 with its Retry-After in ms', async () => {
    const receiver = await Receiver.start(answer(503, { 'retry-after': '7' }));
    expect(await transport().post(attempt(receiver.url))).toEqual({
      kind: 'answered',
      status: 503,
      retryAfterMs: 7_000,
      sessionEnded: false,
    });
  });

  it('reads a Retry-After HTTP-date against the clock', async () => {
    const receiver = await Receiver.start(answer(429, { 'retry-after': 'Wed, 21 Oct 2015 07:28:30 GMT' }));
    const now = Date.parse('Wed, 21 Oct 2015 07:28:00 GMT');
    expect(await transport({ clock: { ...systemClock, now: () => now } }).post(attempt(receiver.url))).toEqual({
      kind: 'answered',
      status: 429,
      retryAfterMs: 30_000,
      sessionEnded: false,
    });
  });

  it('reports a redirect as answered and does not follow it', async () => {
    const elsewhere = await Receiver.start();
    const receiver = await Receiver.start(answer(302, { location: `${elsewhere.url}/tasks/t1` }));
    expect(await transport().post(attempt(receiver.url))).toEqual({ kind: 'answered', status: 302, sessionEnded: false });
    expect(receiver.requests).toHaveLength(1);
    expect(elsewhere.requests).toEqual([]);
  });

  it('recognises the session_ended answer by its literal values', async () => {
    const ended = await Receiver.start(answer(200, { 'content-type': 'application/json' }, SESSION_ENDED));
    expect(await transport().post(attempt(ended.url))).toEqual({ kind: 'answered', status: 200, sessionEnded: true });
    const lookalike = await Receiver.start(answer(200, {}, '{"ok":"true","ignored":true,"reason":"session_ended"}'));
    expect(await transport().post(attempt(lookalike.url))).toEqual({ kind: 'answered', status: 200, sessionEnded: false });
  });

  it('reads no more of an answer than it needs', async () => {
    const receiver = await Receiver.start(answer(200, {}, SESSION_ENDED));
    expect(await transport({ maxResponseBytes: 16 }).post(attempt(receiver.url))).toEqual({
      kind: 'answered',
      status: 200,
      sessionEnded: false,
    });
  });

  it('reaches localhost and [::1] receivers', async (context) => {
    const v4 = await Receiver.start();
    expect(await transport().post(attempt(`http://localhost:${v4.port}`))).toMatchObject({ kind: 'answered', status: 200 });
    expect(v4.requests[0]?.headers.host).toBe(`localhost:${v4.port}`);
    if (!ipv6) return context.skip('no IPv6 loopback on this machine');
    const v6 = await Receiver.start(undefined, '::1');
    expect(await transport().post(attempt(`http://[::1]:${v6.port}`))).toMatchObject({ kind: 'answered', status: 200 });
    expect(v6.requests).toHaveLength(1);
  });

  it('moves on to the next checked address when one refuses the connection', async (context) => {
    if (!ipv6) return context.skip('no IPv6 loopback on this machine');
    // localhost is 127.0.0.1 then ::1; only ::1 listens on this port.
    const v6 = await Receiver.start(undefined, '::1');
    expect(await transport().post(attempt(`http://localhost:${v6.port}`))).toMatchObject({ kind: 'answered', status: 200 });
    expect(v6.requests).toHaveLength(1);
  });
});

describe('an attempt that gets no answer', () => {
  /** Posts on a simulated clock; shows the attempt still open 1 ms before its 5 s limit, and timed out at it. */
  async function timedOut(receiver: Receiver, started: () => boolean): Promise<void> {
    const clock = new SimulatedClock();
    let outcome: CallbackOutcome | undefined;
    const posted = transport({ clock })
      .post(attempt(receiver.url))
      .then((answer) => (outcome = answer));
    await until(started, 'the attempt under way');
    clock.increment(4_999);
    await aMoment();
    expect(outcome).toBeUndefined();
    clock.increment(1);
    await posted;
    expect(outcome).toEqual({ kind: 'timeout' });
  }

  it('times out at the attempt limit when the receiver never answers', async () => {
    const receiver = await Receiver.start(never);
    await timedOut(receiver, () => receiver.requests.length === 1);
    expect(receiver.requests).toHaveLength(1);
  });

  it('times out at the attempt limit when the answer starts but its body never ends', async () => {
    const receiver = await Receiver.start((_received, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"ok":');
    });
    await timedOut(receiver, () => receiver.requests.length === 1);
  });

  it('reports a refused connection by its code', async () => {
    expect(await transport().post(attempt(`http://127.0.0.1:${await closedPort()}`))).toEqual({
      kind: 'connection_failed',
      code: 'ECONNREFUSED',
    });
  });

  it('reports an allowlisted name that does not resolve as a connection failure', async () => {
    const outcome = await transport({ allowlist: ['http://gone.example.test'] }).post(attempt('http://gone.example.test'));
    expect(outcome).toEqual({ kind: 'connection_failed', code: 'ENOTFOUND' });
  });

  it('ends as aborted when the host closes mid-attempt', async () => {
    const receiver = await Receiver.start(never);
    const closing = new AbortController();
    const pending = transport().post(attempt(receiver.url, { signal: closing.signal }));
    await receiver.received();
    closing.abort();
    expect(await pending).toEqual({ kind: 'aborted' });
  });

  it('does not start when the host is already closing', async () => {
    const receiver = await Receiver.start();
    const sockets = countClientSockets();
    try {
      expect(await transport().post(attempt(receiver.url, { signal: AbortSignal.abort() }))).toEqual({ kind: 'aborted' });
      expect(sockets.count()).toBe(0);
    } finally {
      sockets.stop();
    }
  });
});

describe('a refused URL', () => {
  // Each of these would reach the live loopback receiver if the check were skipped.
  const refusals = (port: number) => [
    `http://user:pw@127.0.0.1:${port}`,
    `http://127.0.0.1:${port}/hooks?x=1`,
    `http://rogue.example.test:${port}`,
    `http://mixed.example.test:${port}`,
  ];

  it('opens no socket at all', async () => {
    const receiver = await Receiver.start();
    const resolve = tableResolver({ 'rogue.example.test': ['127.0.0.1'], 'mixed.example.test': ['127.0.0.1', '10.0.0.1'] });
    const relay = transport({ allowlist: [`http://mixed.example.test:${receiver.port}`], resolve });
    const sockets = countClientSockets();
    try {
      const outcomes: CallbackOutcome[] = [];
      for (const url of refusals(receiver.port)) outcomes.push(await relay.post(attempt(url)));
      expect(sockets.count()).toBe(0);
      expect(receiver.requests).toEqual([]);
      expect(outcomes).toEqual([
        { kind: 'refused', reason: 'userinfo' },
        { kind: 'refused', reason: 'query_or_fragment' },
        { kind: 'refused', reason: 'not_allowlisted' },
        { kind: 'refused', reason: 'private_address' },
      ]);
      // The same receiver, reached by an accepted URL: the count does see a connection when there is one.
      expect(await relay.post(attempt(receiver.url))).toMatchObject({ kind: 'answered', status: 200 });
      expect(sockets.count()).toBe(1);
    } finally {
      sockets.stop();
    }
  });

  it('refuses a loopback receiver the loopback rule excludes, before any socket', async () => {
    const receiver = await Receiver.start();
    // The name resolves to the receiver's own address: the connect-time lookup lands on loopback.
    const resolve = tableResolver({ 'cb.example.test': ['127.0.0.1'] });
    const allowlist = [`http://cb.example.test:${receiver.port}`];
    const sockets = countClientSockets();
    try {
      expect(await transport({ loopback: false }).post(attempt(receiver.url))).toEqual({ kind: 'refused', reason: 'loopback_off' });
      expect(await transport({ loopbackPorts: [receiver.port + 1] }).post(attempt(`http://localhost:${receiver.port}`))).toEqual({
        kind: 'refused',
        reason: 'loopback_port',
      });
      expect(await transport({ allowlist, resolve, loopback: false }).post(attempt(allowlist[0]!))).toEqual({
        kind: 'refused',
        reason: 'loopback_off',
      });
      expect(sockets.count()).toBe(0);
      expect(receiver.requests).toEqual([]);
      // The allowed port is reached.
      expect(await transport({ loopbackPorts: [receiver.port] }).post(attempt(receiver.url))).toMatchObject({
        kind: 'answered',
        status: 200,
      });
    } finally {
      sockets.stop();
    }
  });

  it('carries the reason code', async () => {
    const resolve = tableResolver({ 'mixed.example.test': ['127.0.0.1', '10.0.0.1'] });
    const relay = transport({ allowlist: ['http://mixed.example.test:9'], resolve });
    expect(await relay.post(attempt('http://user:pw@127.0.0.1:9'))).toEqual({ kind: 'refused', reason: 'userinfo' });
    expect(await relay.post(attempt('http://mixed.example.test:9'))).toEqual({ kind: 'refused', reason: 'private_address' });
    expect(await relay.post(attempt('http://169.254.169.254'))).toEqual({ kind: 'refused', reason: 'not_allowlisted' });
  });
});

describe('DNS rebinding', () => {
  it('looks up once per attempt and connects to the address it checked', async () => {
    const receiver = await Receiver.start();
    const name = `cb.example.test:${receiver.port}`;
    // Loopback on the first lookup, private on every later one: a second lookup would be refused.
    const resolve = tableResolver({ 'cb.example.test': { sequence: [['127.0.0.1'], ['10.0.0.1']] } });
    const relay = transport({ allowlist: [`http://${name}`], resolve });

    expect(await relay.post(attempt(`http://${name}/hooks`))).toEqual({ kind: 'answered', status: 200, sessionEnded: false });
    expect(resolve.calls).toEqual(['cb.example.test']);
    expect(receiver.requests).toMatchObject([{ url: '/hooks/tasks/t1', headers: { host: name } }]);

    // The next attempt looks again, and what it now hears is refused before any connection.
    expect(await relay.post(attempt(`http://${name}/hooks`))).toEqual({ kind: 'refused', reason: 'private_address' });
    expect(resolve.calls).toEqual(['cb.example.test', 'cb.example.test']);
    expect(receiver.requests).toHaveLength(1);
  });

  it('refuses the whole URL when any answer is private', async () => {
    const receiver = await Receiver.start();
    const resolve = tableResolver({ 'cb.example.test': ['127.0.0.1', '10.0.0.1'] });
    const relay = transport({ allowlist: [`http://cb.example.test:${receiver.port}`], resolve });
    expect(await relay.post(attempt(`http://cb.example.test:${receiver.port}`))).toEqual({ kind: 'refused', reason: 'private_address' });
    expect(receiver.requests).toEqual([]);
  });

  it('tries the checked answers in order', async () => {
    const receiver = await Receiver.start();
    // 127.0.0.2 is loopback too, but nothing listens there on this port.
    const resolve = tableResolver({ 'cb.example.test': ['127.0.0.2', '127.0.0.1'] });
    const relay = transport({ allowlist: [`http://cb.example.test:${receiver.port}`], resolve });
    const sockets = countClientSockets();
    try {
      expect(await relay.post(attempt(`http://cb.example.test:${receiver.port}`))).toMatchObject({ kind: 'answered', status: 200 });
      expect(sockets.count()).toBe(2);
      expect(receiver.requests).toHaveLength(1);
    } finally {
      sockets.stop();
    }
  });

  it('bounds a lookup that never answers by the attempt timeout', async () => {
    const clock = new SimulatedClock();
    const relay = transport({ clock, allowlist: ['http://slow.example.test'], resolve: () => new Promise(() => {}) });
    const posted = relay.post(attempt('http://slow.example.test'));
    await until(() => clock.pending === 1, 'the attempt limit armed');
    clock.increment(5_000);
    expect(await posted).toEqual({ kind: 'timeout' });
  });

  it("reports a lookup past the policy's own limit as a DNS timeout, to be retried", async () => {
    const policy = new CallbackPolicy({
      allowlist: ['http://slow.example.test'],
      resolve: () => new Promise(() => {}),
      lookupTimeoutMs: 50,
    });
    const relay = httpCallbackTransport({ policy, timeoutMs: 5_000 });
    expect(await relay.post(attempt('http://slow.example.test'))).toEqual({ kind: 'connection_failed', code: 'ETIMEOUT' });
  });
});

// A self-signed certificate for cb.example.test (test only): no client trusts it, so the handshake must fail.
const TLS_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgwhoFmNKhEx9s3Gcy
qjbD0ijExu7VrOhEWLrpUjVxIP+hRANCAARjNSY8TEm4bwdbbz+9JA2eifEJSjS9
OMt+SZS/GncafWbyCPvOyrYXqm+WsdOLwViGz2RG4qU/LEnZ1Je5cQG4
-----END PRIVATE KEY-----`;
const TLS_CERT = `-----BEGIN CERTIFICATE-----
MIIBpjCCAU2gAwIBAgIUN5H+wm4YF/JbCSZuFsZQ3WOtGA4wCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPY2IuZXhhbXBsZS50ZXN0MCAXDTI2MTEyMTEzNDQxNloYDzIx
MjYxMDI4MTM0NDE2WjAaMRgwFgYDVQQDDA9jYi5leGFtcGxlLnRlc3QwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAARjNSY8TEm4bwdbbz+9JA2eifEJSjS9OMt+SZS/
GncafWbyCPvOyrYXqm+WsdOLwViGz2RG4qU/LEnZ1Je5cQG4o28wbTAdBgNVHQ4E
FgQUOf2buOCyOYOiQio10ZYx7orD8hEwHwYDVR0jBBgwFoAUOf2buOCyOYOiQio1
0ZYx7orD8hEwDwYDVR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgg9jYi5leGFtcGxl
LnRlc3QwCgYIKoZIzj0EAwIDRwAwRAIgEsQuW8l1GRBOsU5MCIiWOSpQO5IOnQxM
6zPMR8tN0MoCIDcrjMZqmEtIizMR2jeAbK0lFgGuIQCmTDHMwPJonvo8
-----END CERTIFICATE-----`;

describe('https', () => {
  it("sends the URL's name as SNI and verifies the certificate, while dialling the checked address", async () => {
    const names: string[] = [];
    let handshakes = 0;
    const context = createSecureContext({ key: TLS_KEY, cert: TLS_CERT });
    const server = createTlsServer({
      key: TLS_KEY,
      cert: TLS_CERT,
      SNICallback: (name, done) => {
        names.push(name);
        done(null, context);
      },
    });
    server.on('secureConnection', () => handshakes++);
    server.on('tlsClientError', () => {});
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const resolve = tableResolver({ 'cb.example.test': ['127.0.0.1'] });
      const relay = transport({ allowlist: [`https://cb.example.test:${port}`], resolve });
      expect(await relay.post(attempt(`https://cb.example.test:${port}`))).toEqual({
        kind: 'connection_failed',
        code: 'DEPTH_ZERO_SELF_SIGNED_CERT',
      });
      expect(names).toEqual(['cb.example.test']);
      expect(handshakes).toBe(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('https with a CA of our own', () => {
  it('delivers to a receiver whose certificate the CA option trusts, by name and by address', async () => {
    const tls = await testCertificates();
    const receiver = await Receiver.start(undefined, '127.0.0.1', tls);
    const trusting = transport({ ca: tls.ca });
    for (const url of [`https://localhost:${receiver.port}/cb`, `https://127.0.0.1:${receiver.port}/cb`]) {
      expect(await trusting.post(attempt(url))).toEqual({ kind: 'answered', status: 200, sessionEnded: false });
    }
    expect(receiver.requests.map((r) => [r.url, r.headers.authorization, r.body])).toEqual([
      ['/cb/tasks/t1', `Bearer ${TOKEN}`, BODY],
      ['/cb/tasks/t1', `Bearer ${TOKEN}`, BODY],
    ]);
  });

  it('fails as a TLS error without it, before any request is sent', async () => {
    const tls = await testCertificates();
    const receiver = await Receiver.start(undefined, '127.0.0.1', tls);
    const url = `https://127.0.0.1:${receiver.port}/cb`;
    expect(await transport().post(attempt(url))).toEqual({ kind: 'connection_failed', code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
    // Another CA is no help either: trust is in that CA, not in having a CA option.
    const other = await testCertificates();
    expect(await transport({ ca: other.ca }).post(attempt(url))).toEqual({
      kind: 'connection_failed',
      code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    });
    expect(receiver.requests).toEqual([]);
  });
});

describe('the test harness', () => {
  it('catches a connection to a name before it reaches real DNS', async () => {
    const socket = connect({ host: 'guard.example.test', port: 9 });
    const error = await new Promise<NodeJS.ErrnoException>((resolve) => socket.once('error', resolve));
    expect(error.code).toBe('ENOTFOUND');
    expect(dns.lookups.splice(0)).toEqual(['guard.example.test']);
  });
});

describe('the callback token', () => {
  it('appears in no outcome of a failing attempt', async () => {
    const silent = await Receiver.start(never);
    const relay = transport({ timeoutMs: 200, allowlist: ['http://gone.example.test'] });
    const closing = new AbortController();
    closing.abort();
    const outcomes: CallbackOutcome[] = [
      await relay.post(attempt(`http://127.0.0.1:${await closedPort()}`)),
      await relay.post(attempt(silent.url)),
      await relay.post(attempt('http://gone.example.test')),
      await relay.post(attempt(`http://${TOKEN}:${TOKEN}@127.0.0.1:9`)),
      await relay.post(attempt(`http://127.0.0.1:9/?token=${TOKEN}`)),
      await relay.post(attempt(silent.url, { signal: closing.signal })),
      // A token no header can carry: undici refuses the request itself.
      await relay.post(attempt(silent.url, { token: `${TOKEN}\r\nx-injected: 1` })),
    ];
    expect(outcomes.map((outcome) => outcome.kind)).toEqual([
      'connection_failed',
      'timeout',
      'connection_failed',
      'refused',
      'refused',
      'aborted',
      'connection_failed',
    ]);
    expect(outcomes.at(-1)).toEqual({ kind: 'connection_failed', code: 'UND_ERR_INVALID_ARG' });
    for (const outcome of outcomes) expect(JSON.stringify(outcome)).not.toContain(TOKEN);
  });
});
