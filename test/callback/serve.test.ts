/** The callback flags of `assistant-relay serve`, in the built CLI: `--callback-loopback` and `--callback-loopback-ports`. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../adapters/cli/args.js';
import { ServeChild, useChildFolder } from '../support/child.js';
import { post } from '../support/http.js';

const TOKEN = 'callback-flags-token';
const folder = useChildFolder();

async function callback(child: ServeChild, url: string): Promise<{ status: number; body: unknown }> {
  return post(child.url, TOKEN, { session_id: 's', task_id: 't1', text: 'hi', callback: { url, token: 'k' } });
}

describe('serve: loopback callbacks', () => {
  it('are on, on every port, by default', () => {
    expect(parseServeArgs(['--token', 'x'], {})).toMatchObject({ callbackLoopback: true, callbackLoopbackPorts: undefined });
    expect(parseServeArgs(['--token', 'x', '--callback-loopback', 'off'], {})).toMatchObject({
      callbackLoopback: false,
      callbackLoopbackPorts: undefined,
    });
  });

  it('--callback-loopback-ports refuses other loopback ports', async () => {
    const child = await ServeChild.start([
      '--port',
      '0',
      '--db',
      join(folder(), 'relay.db'),
      '--token',
      TOKEN,
      '--callback-loopback-ports',
      '9000-9100',
    ]);
    expect(await callback(child, 'http://127.0.0.1:8080/cb')).toMatchObject({
      status: 400,
      body: {
        error: { code: 'callback_not_allowed', message: expect.stringContaining('allows loopback callbacks on ports 9000-9100 only') },
      },
    });
    expect((await callback(child, 'http://127.0.0.1:9000/cb')).status).toBe(202);
  });

  it('ASSISTANT_RELAY_CALLBACK_LOOPBACK=off refuses them all', async () => {
    const child = await ServeChild.start(['--port', '0', '--db', join(folder(), 'relay.db'), '--token', TOKEN], {
      env: { ASSISTANT_RELAY_CALLBACK_LOOPBACK: 'off' },
    });
    expect(await callback(child, 'http://localhost:9000/cb')).toMatchObject({
      status: 400,
      body: { error: { code: 'callback_not_allowed', message: expect.stringContaining('allows no loopback callbacks') } },
    });
  });
});
