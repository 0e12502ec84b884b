/** Every `PubSub`, held to the contract: the default in one process, and the two brokers nodes can share. */
import { randomBytes } from 'node:crypto';
import { JetStreamApiError, type StreamInfo } from '@nats-io/jetstream';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalPubSub, assistantChannel, type ChannelNotice, type PubSub } from '../../engine/reasoning/pubsub.js';
import type { BrokerPubSub } from '../../adapters/brokers/broker.js';
import { NatsPubSub, ensureStream } from '../../adapters/brokers/nats.js';
import { RedisPubSub } from '../../adapters/brokers/redis.js';
import { describePubSub } from '../support/pubsub-contract.js';
import { NATS_URL, REDIS_URL } from '../support/brokers.js';
import { waitFor } from '../support/wait.js';

describePubSub('LocalPubSub', async () => ({ pubsub: new LocalPubSub(() => {}), settle: async () => {} }));

it('LocalPubSub reports a subscriber that throws, with its topic', () => {
  const failures: string[] = [];
  const pubsub = new LocalPubSub((error, topic) => failures.push(`${topic}: ${(error as Error).message}`));
  pubsub.subscribe(assistantChannel('a'), () => {
    throw new Error('subscriber broke');
  });
  pubsub.publish(assistantChannel('a'), { job_id: '1', type: 'job.created' });
  expect(failures).toEqual(['assistant_channel:a: subscriber broke']);
});

/** Waits until a marker published after everything else comes back: a broker's channel is one ordered stream. */
async function settled(pubsub: PubSub): Promise<void> {
  const topic = assistantChannel(`settle-${randomBytes(4).toString('hex')}`);
  let heard = false;
  const leave = pubsub.subscribe(topic, () => (heard = true));
  pubsub.publish(topic, { type: 'log.appended' });
  await waitFor('the marker', () => heard);
  leave();
}

const BROKERS = {
  'NATS JetStream': (namespace: string) => NatsPubSub.connect({ url: NATS_URL, namespace, report: () => {} }),
  'Redis Streams': (namespace: string) => RedisPubSub.connect({ url: REDIS_URL, namespace, report: () => {} }),
};

for (const [name, connect] of Object.entries(BROKERS)) {
  describePubSub(name, async () => {
    const pubsub = await connect(`test_${randomBytes(6).toString('hex')}`);
    return {
      pubsub,
      settle: () => settled(pubsub),
      async close() {
        await pubsub.remove();
        await pubsub.close();
      },
    };
  });

  describe(`${name}: between nodes`, () => {
    const open: BrokerPubSub[] = [];
    afterEach(async () => {
      for (const broker of open.splice(0)) {
        await broker.remove();
        await broker.close();
      }
    });

    it('a notice one node publishes is heard by another that subscribed, and by none of another namespace', async () => {
      const namespace = `test_${randomBytes(6).toString('hex')}`;
      const [a, b, elsewhere] = await Promise.all([connect(namespace), connect(namespace), connect(`${namespace}_x`)]);
      open.push(a, b, elsewhere);
      const [heard, strayed]: [ChannelNotice[], ChannelNotice[]] = [[], []];
      b.subscribe(assistantChannel('i'), (notice) => heard.push(notice));
      elsewhere.subscribe(assistantChannel('i'), (notice) => strayed.push(notice));
      a.publish(assistantChannel('i'), { job_id: 'j', type: 'job.created' });
      await settled(a);
      await settled(b);
      await settled(elsewhere);
      expect([heard, strayed]).toEqual([[{ job_id: 'j', type: 'job.created' }], []]);
      expect([a.health.connected, b.health.connected]).toEqual([true, true]);
    });
  });
}

describe('NATS JetStream: creating the channel stream', () => {
  /** A server whose other streams are being deleted: it fails a create now and then, as CI's once did. */
  function churningServer(failures: number) {
    const adds: string[] = [];
    const streams = {
      info: async (): Promise<StreamInfo> => {
        throw new JetStreamApiError({ code: 404, err_code: 10059, description: 'stream not found' });
      },
      update: async (): Promise<StreamInfo> => {
        throw new Error('not there to update');
      },
      add: async (config: { name: string }): Promise<StreamInfo> => {
        adds.push(config.name);
        if (adds.length <= failures)
          throw new JetStreamApiError({ code: 500, err_code: 10077, description: 'error creating store for stream' });
        return {} as StreamInfo;
      },
    };
    return { streams, adds };
  }

  it('rides out a server that fails a create now and then: tried again after 0.1, 0.2 s', async () => {
    const { streams, adds } = churningServer(2);
    const waits: number[] = [];
    await ensureStream(streams, { name: 'ns_assistant_channel' }, async (ms) => void waits.push(ms));
    expect([adds.length, waits]).toEqual([3, [100, 200]]);
  });

  it("gives up after five tries (1.5 s of waits), with the server's error", async () => {
    const { streams, adds } = churningServer(Infinity);
    const waits: number[] = [];
    await expect(ensureStream(streams, { name: 'ns_assistant_channel' }, async (ms) => void waits.push(ms))).rejects.toThrow(
      'error creating store for stream',
    );
    expect([adds.length, waits]).toEqual([5, [100, 200, 400, 800]]);
  });
});
