/** Every `PubSub`, held to the contract: the default in one process, and the two brokers nodes can share (broker-topics.test.ts: what each subscribes to at the broker). */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalPubSub, assistantChannel, type ChannelNotice } from '../../engine/reasoning/pubsub.js';
import type { BrokerPubSub } from '../../adapters/brokers/broker.js';
import { describePubSub } from '../support/pubsub-contract.js';
import { BROKERS, settled } from '../support/brokers.js';
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
      const topic = assistantChannel(randomUUID());
      b.subscribe(topic, (notice) => heard.push(notice));
      elsewhere.subscribe(topic, (notice) => strayed.push(notice));
      // Nothing orders two nodes' subscribing and publishing: once a node's own marker is back, its subscriptions before it are at the broker.
      await settled(b);
      await settled(elsewhere);
      a.publish(topic, { job_id: 'j', type: 'job.created' });
      await waitFor('the notice on the other node', () => heard.length === 1);
      await settled(a);
      await settled(elsewhere);
      expect([heard, strayed]).toEqual([[{ job_id: 'j', type: 'job.created' }], []]);
      expect([a.health.connected, b.health.connected]).toEqual([true, true]);
    });
  });
}
