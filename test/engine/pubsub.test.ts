/** The default `PubSub`, in one process, held to the contract every implementation must meet. */
import { expect, it } from 'vitest';
import { LocalPubSub, assistantChannel } from '../../src/engine/backend/pubsub.js';
import { describePubSub } from '../support/pubsub-contract.js';

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
