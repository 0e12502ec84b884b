/**
 * What every `PubSub` must do, as a suite any implementation runs against itself: the in-process default,
 * and each broker (NATS, Redis Streams). `settle` waits until whatever was published has been
 * heard; `close`, if there is one, is called after each test.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { assistantChannel, type ChannelNotice, type JobNotice, type PubSub } from '../../engine/reasoning/pubsub.js';

export interface OpenedPubSub {
  readonly pubsub: PubSub;
  settle(): Promise<void>;
  close?(): Promise<void>;
}

// Integration ids are UUIDs: a broker refuses a topic of anything else.
const [A, B] = [assistantChannel(randomUUID()), assistantChannel(randomUUID())];
const created = (job_id: string): JobNotice => ({ job_id, type: 'job.created' });
const jobOf = (notice: ChannelNotice): string => ('job_id' in notice ? notice.job_id : notice.type);

export function describePubSub(name: string, openOne: () => Promise<OpenedPubSub>): void {
  describe(`PubSub contract: ${name}`, () => {
    const opened: OpenedPubSub[] = [];
    afterEach(async () => {
      for (const one of opened.splice(0)) await one.close?.();
    });
    const open = async () => {
      const one = await openOne();
      opened.push(one);
      return one;
    };
    it('hears what is published on its topic, in order, and nothing of another topic', async () => {
      const { pubsub, settle } = await open();
      const heard: ChannelNotice[] = [];
      pubsub.subscribe(A, (notice) => heard.push(notice));
      pubsub.publish(A, created('1'));
      pubsub.publish(B, created('2'));
      pubsub.publish(A, { job_id: '1', type: 'job.delivered', seq: 4 });
      await settle();
      // Notices are plain JSON: a broker between processes carries them as they are.
      expect(JSON.parse(JSON.stringify(heard))).toEqual([created('1'), { job_id: '1', type: 'job.delivered', seq: 4 }]);
    });

    it('every subscriber hears each notice; one that unsubscribed hears nothing more', async () => {
      const { pubsub, settle } = await open();
      const [first, second]: [string[], string[]] = [[], []];
      const leave = pubsub.subscribe(A, (notice) => first.push(jobOf(notice)));
      pubsub.subscribe(A, (notice) => second.push(jobOf(notice)));
      pubsub.publish(A, created('1'));
      await settle();
      leave();
      pubsub.publish(A, created('2'));
      await settle();
      expect([first, second]).toEqual([['1'], ['1', '2']]);
    });

    it('a subscriber that throws does not keep the notice from the others', async () => {
      const { pubsub, settle } = await open();
      const heard: string[] = [];
      pubsub.subscribe(A, () => {
        throw new Error('subscriber broke');
      });
      pubsub.subscribe(A, (notice) => heard.push(jobOf(notice)));
      pubsub.publish(A, created('1'));
      await settle();
      expect(heard).toEqual(['1']);
    });
  });
}
