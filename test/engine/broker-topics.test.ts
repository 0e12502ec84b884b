/**
 * What each broker subscribes to at the broker (issue 25, item 3): an integration's subject or key only
 * while the node has a subscriber of its topic, so a node hears nothing of the others'; subscribing again
 * after leaving, notices in the order published, and the subscriptions taken up again after the broker
 * restarts. What reaches the broker's client is counted where it enters (`received`), before any local
 * subscriber is looked for.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BrokerOptions, BrokerPubSub } from '../../adapters/brokers/broker.js';
import { assistantChannel, type ChannelNotice } from '../../engine/reasoning/pubsub.js';
import { BROKERS, settled } from '../support/brokers.js';
import { ownNats, ownRedis, type OwnService } from '../support/services.js';
import { waitFor } from '../support/wait.js';

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

const OWN: Record<keyof typeof BROKERS, () => Promise<OwnService>> = { NATS: ownNats, Redis: ownRedis };

const delivered = (seq: number): ChannelNotice => ({ job_id: 'j', type: 'job.delivered', seq });
const seqOf = (notice: ChannelNotice): number => ('seq' in notice ? notice.seq : 0);

for (const [name, connect] of Object.entries(BROKERS)) {
  describe(`${name}: a subscription per integration`, () => {
    /** Two nodes of a namespace of their own; the integrations each notice reached at each one's client. */
    async function nodes(options: Partial<BrokerOptions> = {}) {
      const namespace = `test_${randomBytes(6).toString('hex')}`;
      const [a, b] = await Promise.all([connect(namespace, options), connect(namespace, options)]);
      stops.push(async () => {
        await a.remove();
        await Promise.all([a.close(), b.close()]);
      });
      return { a, b, reached: { a: reachedAt(a), b: reachedAt(b) } };
    }

    function reachedAt(broker: BrokerPubSub): string[] {
      const reached: string[] = [];
      const client = broker as unknown as { received(integrationId: string, text: string): void };
      const received = client.received.bind(broker);
      vi.spyOn(client, 'received').mockImplementation((integrationId, text) => {
        reached.push(integrationId);
        received(integrationId, text);
      });
      return reached;
    }

    it('a node receives nothing at the broker of a topic it has no subscriber of', async () => {
      const { a, b, reached } = await nodes();
      const [mine, other] = [randomUUID(), randomUUID()];
      const heard: ChannelNotice[] = [];
      b.subscribe(assistantChannel(mine), (notice) => heard.push(notice));
      await settled(b);
      reached.b.length = 0;
      for (let seq = 1; seq <= 5; seq += 1) a.publish(assistantChannel(other), delivered(seq));
      a.publish(assistantChannel(mine), delivered(6));
      await waitFor('the notice of its integration', () => heard.length === 1);
      // `a` subscribes to nothing: what it published came back to it not once.
      expect([reached.a, reached.b, b.subscribed, a.subscribed]).toEqual([[], [mine], [mine], []]);
    });

    it('leaving stops the subscription at the broker, and subscribing again starts it again', async () => {
      const { a, b, reached } = await nodes();
      const [topic, marker] = [assistantChannel(randomUUID()), assistantChannel(randomUUID())];
      const [heard, marks]: [number[], number[]] = [[], []];
      // `marker` stays subscribed: `a`'s notices reach `b` in the order `a` published them.
      b.subscribe(marker, (notice) => marks.push(seqOf(notice)));
      const [first, second] = [b.subscribe(topic, (notice) => heard.push(seqOf(notice))), b.subscribe(topic, () => {})];
      await settled(b);
      a.publish(topic, delivered(1));
      await waitFor('the first notice', () => heard.length === 1);
      first();
      first();
      expect(b.subscribed).toHaveLength(2);
      second();
      expect(b.subscribed).toHaveLength(1);
      a.publish(topic, delivered(2));
      a.publish(marker, delivered(1));
      await waitFor('the marker', () => marks.length === 1);
      b.subscribe(topic, (notice) => heard.push(seqOf(notice)));
      await settled(b);
      a.publish(topic, delivered(3));
      await waitFor('the notice after subscribing again', () => heard.length === 2);
      expect(heard).toEqual([1, 3]);
      expect(reached.b.filter((id) => assistantChannel(id) === topic)).toHaveLength(2);
    });

    it("notices published while a node is subscribed reach it in the order they were published, each topic's apart", async () => {
      const { a, b } = await nodes();
      const topics = [assistantChannel(randomUUID()), assistantChannel(randomUUID())];
      const heard: number[][] = [[], []];
      topics.forEach((topic, n) => b.subscribe(topic, (notice) => heard[n]!.push(seqOf(notice))));
      await settled(b);
      for (let seq = 1; seq <= 200; seq += 1) a.publish(topics[seq % 2]!, delivered(seq));
      await waitFor('every notice', () => heard[0]!.length + heard[1]!.length === 200);
      const upTo200 = Array.from({ length: 200 }, (_, n) => n + 1);
      expect(heard).toEqual([upTo200.filter((seq) => seq % 2 === 0), upTo200.filter((seq) => seq % 2 === 1)]);
    });

    it('refuses a topic whose integration is not a UUID: it never becomes a wildcard', async () => {
      const { a } = await nodes();
      for (const id of ['*', '>', 'a.b', 'x*', randomUUID().toUpperCase()]) {
        expect(() => a.subscribe(assistantChannel(id), () => {})).toThrow(RangeError);
        expect(() => a.publish(assistantChannel(id), { type: 'log.appended' })).toThrow(RangeError);
      }
      expect(() => a.subscribe('elsewhere', () => {})).toThrow(RangeError);
      expect(a.subscribed).toEqual([]);
    });

    it('takes its subscriptions up again after the broker restarts, and reports the outage once', async () => {
      const service = await OWN[name as keyof typeof BROKERS]();
      stops.push(() => service.stop());
      const reports: string[] = [];
      const { a, b } = await nodes({ url: service.url, report: (_error, what) => reports.push(what) });
      const topics = [assistantChannel(randomUUID()), assistantChannel(randomUUID())];
      const heard: number[][] = [[], []];
      topics.forEach((topic, n) => b.subscribe(topic, (notice) => heard[n]!.push(seqOf(notice))));
      await settled(b);
      await service.restart({ downMs: 500 });
      // Notices published while the subscriptions are being taken up again may be lost (news, never the truth): publish until heard.
      let seq = 0;
      await waitFor('a notice of each integration after the restart', () => {
        seq += 1;
        for (const topic of topics) a.publish(topic, delivered(seq));
        return heard.every((seqs) => seqs.length > 0);
      });
      expect([a.health.connected, b.health.connected]).toEqual([true, true]);
      for (const seqs of heard) expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
      expect(b.subscribed.map(assistantChannel).sort()).toEqual([...topics].sort());
      const failed = reports.filter((what) => what.includes('failed'));
      expect(failed.length).toBeGreaterThan(0);
      expect(failed.length).toBeLessThanOrEqual(4);
      await waitFor('the broker back', () => reports.at(-1) === 'the channel');
    });
  });
}
