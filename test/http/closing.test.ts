/**
 * A closing host: requests that still arrive get 503 `shutting_down` with our body, not fastify's; a
 * connection that never sent anything does not hold the close up.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RawSocket } from '../support/raw-socket.js';
import { Relay, expectError, stopAll, until } from './fixture.js';

afterEach(stopAll);

describe('a closing host', () => {
  it('answers a request that completes while the host closes with 503 shutting_down', async () => {
    const relay = await Relay.start();
    const socket = await RawSocket.connect(relay.url);
    // Half a request: the connection is busy, so closing waits for it rather than dropping it as idle.
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const closing = relay.t.host.close();
    await until(() => !relay.t.host.server.server.listening, 'the host to stop listening');
    socket.write('\r\n');
    await socket.untilClosed();
    expectError(socket.response(), 'shutting_down');
    await closing;
  });

  it('ends a connection on which nothing was ever sent, instead of waiting for its client to drop it', { timeout: 10_000 }, async () => {
    // Far longer than the test may take: the host must not wait for Node to time the connection out.
    const relay = await Relay.start({ headersTimeoutMs: 60_000, requestTimeoutMs: 60_000 });
    const spare = await RawSocket.connect(relay.url);
    await relay.t.host.close();
    await spare.untilClosed();
    expect(spare.received).toBe('');
  });
});
