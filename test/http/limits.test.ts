/**
 * Connection time limits and the stream cap, over real sockets, with short limits set by each test:
 * idle and trickling connections are cut with a coded 408, kept-alive connections are closed when idle,
 * streams outlive every limit, and a stream over the process-wide cap gets 503 with `Retry-After`.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createAssistantHost } from '../../index.js';
import { tempDir } from '../support/host.js';
import { countEvents } from '../support/log.js';
import { RawSocket } from '../support/raw-socket.js';
import { Relay, TOKEN, expectError, sleep, stopAll, until } from './fixture.js';

afterEach(stopAll);

const SHORT = { headersTimeoutMs: 200, requestTimeoutMs: 400, connectionIdleTimeoutMs: 200 };

describe('connection time limits', () => {
  it('closes a connection that never sends a byte, with 408 request_timeout', async () => {
    const relay = await Relay.start(SHORT);
    const socket = await RawSocket.connect(relay.url);
    await socket.untilClosed();
    expectError(socket.response(), 'request_timeout');
  });

  it('cuts headers sent a byte at a time, with 408 request_timeout', async () => {
    const relay = await Relay.start(SHORT);
    const socket = await RawSocket.connect(relay.url);
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    socket.trickle('X-Slow: '.padEnd(10_000, 'a'), 20);
    await socket.untilClosed();
    expectError(socket.response(), 'request_timeout');
  });

  it('cuts a body sent a byte at a time, with 408 request_timeout, and logs nothing', async () => {
    const relay = await Relay.start(SHORT);
    const before = countEvents(relay.db);
    const body = JSON.stringify({ session_id: 's', task_id: 't1', text: 'x'.repeat(1_000) });
    const socket = await RawSocket.connect(relay.url);
    socket.write(
      `POST /v1/incoming HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    socket.trickle(body, 20);
    await socket.untilClosed();
    expectError(socket.response(), 'request_timeout');
    expect(countEvents(relay.db)).toBe(before);
  });

  it('closes a kept-alive connection that stays idle after its answer', async () => {
    const relay = await Relay.start(SHORT);
    const socket = await RawSocket.connect(relay.url);
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => socket.received.includes('"ok":true'), 'the health answer');
    // Node adds a second of grace to the idle limit; its own default would be 5 s, fastify's 72 s.
    await socket.untilClosed(3_000);
    expect(socket.response().status).toBe(200);
  });

  it('lets a stream outlive every limit: no keep-alive, no frame, still open', async () => {
    const relay = await Relay.start({ ...SHORT, keepaliveMs: 60_000 });
    const stream = await relay.subscribe('s');
    // Well past every limit (and Node's grace on the idle one) with nothing written either way.
    await sleep(2_000);
    expect(stream.ended).toBe(false);
    await relay.turn('s', 't1', { message: 'still here' });
    await stream.untilReplies(1);
    expect(stream.replies[0]!.json).toMatchObject({ task_id: 't1', reply_text: 'still here' });
  });
});

describe('the stream cap', () => {
  it('refuses a stream over the process-wide cap with 503 too_many_streams and Retry-After, across sessions', async () => {
    const relay = await Relay.start({ maxStreams: 2 });
    // A logged task makes 'a' a session, whose live readers the host reports.
    await relay.turn('a', 't0', { completed: true });
    const first = await relay.subscribe('a');
    await relay.subscribe('b');

    // A new session_id does not help: the cap counts every session's streams.
    const third = await relay.refused('c');
    expectError(third, 'too_many_streams');
    expect(third.headers['retry-after']).toBe('5');

    // A refused stream held no slot, and a closed one gives its slot back.
    first.close();
    await until(() => relay.readers('a') === 0, 'the closed stream dropped');
    const again = await relay.subscribe('c');
    await relay.turn('c', 't1', { message: 'through' });
    await again.untilReplies(1);
    expect((await relay.refused('d')).status).toBe(503);
  });

  it('gives the slot back when the request is answered without a stream', async () => {
    const relay = await Relay.start({ maxStreams: 1 });
    // An ended session with nothing to replay: 204, no stream.
    await relay.turn('ended', 't1', { completed: true });
    await relay.settled('t1');
    await relay.t.host.endSession('ended');
    for (let i = 0; i < 3; i++) {
      expect((await relay.refused('ended')).status).toBe(204);
    }
    await relay.subscribe('open');
  });
});

describe('limits given when embedding', () => {
  it('refuses a headers limit longer than the request limit before opening anything', async () => {
    const dir = tempDir();
    const db = join(dir, 'relay.db');
    await expect(
      createAssistantHost({ db, token: TOKEN, agent: 'echo', headersTimeoutMs: 5_000, requestTimeoutMs: 1_000 }),
    ).rejects.toThrow(/headersTimeoutMs must not be longer than requestTimeoutMs/);
    expect(existsSync(db)).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  });
});
