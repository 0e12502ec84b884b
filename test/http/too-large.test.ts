/**
 * A client that sends too large a body reads the 413, whatever client it is (issue 23's defect: the
 * answer reached `fetch` and `node:http` clients as EPIPE). The edge answers at once and reads the rest of
 * the body before it closes: closed with bytes unread, a socket is reset, and a client still sending
 * hears of the reset before it reads the answer. The host's `/v1/incoming` and the backend's job routes
 * share the edge.
 */
import { randomUUID } from 'node:crypto';
import * as http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveBackend, type ServedBackend } from '../support/backend.js';
import { countBackendEvents, countEvents } from '../support/log.js';
import { Relay, TOKEN, sleep, stopAll } from './fixture.js';

const MIB = 1024 * 1024;

interface Target {
  readonly url: string;
  readonly token: string;
  /** The body: JSON the route takes, grown to `bytes` by one long string. */
  readonly body: (bytes: number) => Buffer;
  readonly events: () => Promise<number>;
}

function padded(shape: (filler: string) => unknown, bytes: number): Buffer {
  const empty = Buffer.byteLength(JSON.stringify(shape('')));
  return Buffer.from(JSON.stringify(shape('x'.repeat(bytes - empty))));
}

interface Exchange {
  readonly status: number;
  readonly connection: string | undefined;
  readonly body: unknown;
  /** What went wrong on the client's side of the connection, if anything did. */
  readonly failure: string | undefined;
}

const headers = (target: Target, body: Buffer) => ({
  authorization: `Bearer ${target.token}`,
  'content-type': 'application/json',
  'content-length': String(body.length),
});

/** `node:http`, the whole body written at once, as most callers do; the exchange once the request has closed. */
function viaNodeHttp(target: Target, body: Buffer): Promise<Exchange> {
  return new Promise((resolve) => {
    let failure: string | undefined;
    let answer: Omit<Exchange, 'failure'> | undefined;
    const req = http.request(target.url, { method: 'POST', agent: false, headers: headers(target, body) }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => (answer = { status: res.statusCode!, connection: res.headers.connection, body: JSON.parse(text) }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => (failure = error.code ?? error.message));
    req.on('close', () => resolve({ ...(answer ?? { status: 0, connection: undefined, body: undefined }), failure }));
    req.end(body);
  });
}

/** `fetch` (undici) with a streamed body, sent a part at a time as a slow source would (what made it fail most often). */
async function viaFetch(target: Target, body: Buffer): Promise<Exchange> {
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      await sleep(1);
      const chunk = body.subarray(sent, sent + 256 * 1024);
      sent += chunk.length;
      controller.enqueue(chunk);
      if (sent === body.length) controller.close();
    },
  });
  try {
    const response = await fetch(target.url, {
      method: 'POST',
      headers: headers(target, body),
      body: stream,
      duplex: 'half',
    } as RequestInit);
    return {
      status: response.status,
      connection: response.headers.get('connection') ?? undefined,
      body: await response.json(),
      failure: undefined,
    };
  } catch (error) {
    return { status: 0, connection: undefined, body: undefined, failure: String((error as Error).cause ?? error) };
  }
}

const clients = [
  ['node:http', viaNodeHttp],
  ['fetch', viaFetch],
] as const;

function refusesAndReads(target: () => Target) {
  it.each(clients)('a %s client posting 5 MiB reads the 413, and nothing is logged', async (_name, send) => {
    const before = await target().events();
    const answer = await send(target(), target().body(5 * MIB));
    expect(answer).toEqual({
      status: 413,
      connection: 'close',
      body: { error: { code: 'body_too_large', message: expect.any(String) } },
      failure: undefined,
    });
    expect(await target().events()).toBe(before);
  });
}

describe("a body over the host's limit (POST /v1/incoming)", () => {
  let relay: Relay;
  beforeAll(async () => {
    relay = await Relay.start();
  });
  afterAll(stopAll);

  refusesAndReads(() => ({
    url: `${relay.url}/v1/incoming`,
    token: TOKEN,
    body: (bytes) => padded((text) => ({ session_id: 's1', task_id: 't1', text }), bytes),
    events: async () => countEvents(relay.db),
  }));
});

describe("a body over the backend's limit (POST …/jobs)", () => {
  let served: ServedBackend;
  let integration: { integration_id: string; client_token: string };
  beforeAll(async () => {
    served = await serveBackend();
    const created = await served.backend.integrations.create('assistant-relay');
    if ('refused' in created) throw new Error(created.refused.message);
    integration = created;
  });
  afterAll(() => served.stop());

  refusesAndReads(() => ({
    url: `${served.url}/api/v1/assistant/integrations/${integration.integration_id}/jobs`,
    token: integration.client_token,
    body: (bytes) =>
      padded(
        (text) => ({
          job_id: randomUUID(),
          purpose: 'live_analysis',
          payload: { session_id: 's1', transcript: [{ speaker: 'Ana', text }] },
        }),
        bytes,
      ),
    events: () => countBackendEvents(served.db),
  }));
});
