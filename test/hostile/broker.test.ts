/**
 * The broker, as anyone who can write to it sees it (issue 23, part 6): on three nodes sharing PostgreSQL
 * and a broker (NATS, Redis Streams), notices written straight to the broker order nothing. A
 * forged `stream.opened` (what a node once sent to take a stream over), forged job notices and garbage
 * leave a live plugin stream open and delivering jobs; only a stream opened for real takes it over.
 */
import { randomUUID } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { serveCluster, type ServedBackend } from '../support/backend.js';
import { removeNamespace } from '../support/brokers.js';
import { request } from '../support/http.js';
import { SseConnection } from '../support/sse.js';
import { captureWarnings } from '../support/warnings.js';

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** Writes raw notices on an integration's topic, as a broker client of the attacker's own would. */
const FORGERS: Record<
  'nats' | 'redis',
  (broker: { url: string; namespace: string }, integrationId: string, texts: readonly string[]) => Promise<void>
> = {
  async nats({ url, namespace }, integrationId, texts) {
    const { hostname, port } = new URL(url);
    const connection = await connect({ servers: `${hostname}:${port}` });
    for (const text of texts) connection.publish(`${namespace}.assistant_channel.${integrationId}`, text);
    await connection.flush();
    await connection.close();
  },
  async redis({ url, namespace }, integrationId, texts) {
    const redis = new Redis(url);
    for (const text of texts) await redis.xadd(`${namespace}:assistant_channel:${integrationId}`, '*', 'notice', text);
    redis.disconnect();
  },
};

const job = () => ({
  job_id: randomUUID(),
  purpose: 'live_analysis',
  payload: { session_id: 's', transcript: [{ speaker: 'a', text: 'hi' }] },
});

for (const broker of ['nats', 'redis'] as const) {
  describe(`a forged broker notice on three nodes (${broker})`, () => {
    it('does not close a live plugin stream: it keeps delivering jobs, until a stream opened for real takes over', async () => {
      // A namespace of its own: what is forged here reaches no other test's nodes.
      const namespace = `test_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      const warnings = captureWarnings();
      const served: ServedBackend = await serveCluster({ broker, namespace });
      stops.push(async () => {
        await served.stop();
        await removeNamespace(served.broker!.url, namespace);
      });
      const created = await served.backend.integrations.create('assistant-relay');
      if ('refused' in created) throw new Error(created.refused.message);
      const { integration_id, relay_token, client_token } = created;
      const base = `${served.url}/api/v1/assistant/integrations/${integration_id}`;
      const stream = await SseConnection.open(`${base}/stream`, { token: relay_token });
      expect(stream.status).toBe(200);

      await FORGERS[broker](served.broker!, integration_id, [
        JSON.stringify({ type: 'stream.opened', node: 'forged' }),
        JSON.stringify({ type: 'job.created', job_id: randomUUID() }),
        JSON.stringify({ type: 'job.delivered', job_id: randomUUID(), seq: 99 }),
        JSON.stringify({ type: 'log.appended' }),
        'null',
        'not json',
      ]);
      // Two jobs, one after the other: a node reads an integration's notices in order, so the forgeries came first.
      for (let n = 1; n <= 2; n += 1) {
        const body = job();
        expect((await request(`${base}/jobs`, { token: client_token, body })).status).toBe(201);
        await stream.until((c) => c.frames.some((frame) => frame.data.includes(body.job_id)), 10_000, `job ${n} on the stream`);
      }
      expect(stream.frames.filter((frame) => frame.event === 'superseded')).toEqual([]);
      expect(stream.ended).toBe(false);
      // The garbage is reported (a process warning, with no logger) by the nodes that read it, and nothing else is.
      expect(warnings.length).toBeGreaterThan(0);
      const garbage = `assistant-relay backend: a notice on assistant_channel:${integration_id} that is not JSON`;
      for (const warning of warnings) expect(warning).toMatch(garbage);

      // A second stream, through the balancer to the next node: the log says it took over.
      const second = await SseConnection.open(`${base}/stream`, { token: relay_token });
      expect(second.status).toBe(200);
      await stream.until((c) => c.frames.some((frame) => frame.event === 'superseded'), 10_000, 'superseded');
      await stream.untilEnded();
      const body = job();
      expect((await request(`${base}/jobs`, { token: client_token, body })).status).toBe(201);
      await second.until((c) => c.frames.some((frame) => frame.data.includes(body.job_id)), 10_000, 'the next job on the second stream');
      second.close();
    });
  });
}
