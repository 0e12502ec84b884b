/**
 * `ClusterChannel`: a notice from the broker wakes the node for its integration alone, unless it is the
 * node's own news; job notices stay on the node.
 */
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { ClusterChannel } from '../../engine/reasoning/channel.js';
import { LocalPubSub, assistantChannel, integrationOf, type ChannelNotice } from '../../engine/reasoning/pubsub.js';

it('wakes with the integration of the topic a notice came on, subscribed at the broker once however many listen, never for its own news', () => {
  const broker = new LocalPubSub();
  const woken: string[] = [];
  const channel = new ClusterChannel(
    broker,
    'this-node',
    (integrationId) => woken.push(integrationId),
    () => {},
  );
  const [mine, other] = [randomUUID(), randomUUID()];
  const heard: ChannelNotice[] = [];
  const leaves = [
    channel.subscribe(assistantChannel(mine), (notice) => heard.push(notice)),
    channel.subscribe(assistantChannel(mine), () => {}),
  ];
  // Its own news: folded already when it committed.
  channel.announce(mine);
  channel.announce(other);
  broker.publish(assistantChannel(mine), { type: 'log.appended', node: 'another-node' });
  broker.publish(assistantChannel(mine), { job_id: 'forged', type: 'job.created' });
  expect(woken).toEqual([mine, mine]);
  // What crosses the broker only wakes: the listeners hear their node's own job notices alone.
  channel.publish(assistantChannel(mine), { job_id: 'j', type: 'job.created' });
  expect(heard).toEqual([{ job_id: 'j', type: 'job.created' }]);
  for (const leave of leaves) leave();
  broker.publish(assistantChannel(mine), { type: 'log.appended', node: 'another-node' });
  expect(woken).toHaveLength(2);
});

it("refuses a topic that is no integration's: nothing else crosses the broker", () => {
  const channel = new ClusterChannel(
    new LocalPubSub(),
    'this-node',
    () => {},
    () => {},
  );
  expect(() => channel.subscribe('elsewhere', () => {})).toThrow(RangeError);
  expect(() => channel.subscribe(assistantChannel(''), () => {})).toThrow(RangeError);
});

it('integrationOf is the inverse of assistantChannel', () => {
  const id = randomUUID();
  expect([integrationOf(assistantChannel(id)), integrationOf('assistant_channel:'), integrationOf(id)]).toEqual([id, undefined, undefined]);
});
