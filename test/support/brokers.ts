/**
 * The brokers of this machine, on loopback (`.ci/run` starts any that is not running). The broker's own
 * tests take a namespace each and remove it; the clusters of the suites share one namespace, kept between
 * runs: its notices only make nodes fold (each integration is a test's own).
 */
import { randomUUID } from 'node:crypto';
import type { BrokerOptions } from '../../adapters/brokers/broker.js';
import { connectBroker } from '../../adapters/brokers/connect.js';
import { NatsPubSub } from '../../adapters/brokers/nats.js';
import { RedisPubSub } from '../../adapters/brokers/redis.js';
import { assistantChannel, type PubSub } from '../../engine/reasoning/pubsub.js';
import { waitFor } from './wait.js';

export const NATS_URL = process.env.ASSISTANT_RELAY_TEST_NATS ?? 'nats://127.0.0.1:4222';
export const REDIS_URL = process.env.ASSISTANT_RELAY_TEST_REDIS ?? 'redis://127.0.0.1:6379';

/** The namespace every cluster of the suites (test/support/backend.ts) shares. */
export const CLUSTER_NAMESPACE = 'test_clusters';

/** Removes a test's namespace from the broker (its keys). */
export async function removeNamespace(url: string, namespace: string): Promise<void> {
  const broker = await connectBroker({ url, namespace, report: () => {} });
  await broker.remove();
  await broker.close();
}

/** Each broker, connected to a namespace (its URL this machine's unless given), reporting nothing. */
export const BROKERS = {
  NATS: (namespace: string, options: Partial<BrokerOptions> = {}) =>
    NatsPubSub.connect({ url: NATS_URL, namespace, report: () => {}, ...options }),
  Redis: (namespace: string, options: Partial<BrokerOptions> = {}) =>
    RedisPubSub.connect({ url: REDIS_URL, namespace, report: () => {}, ...options }),
};

/** Waits until a marker published after everything else comes back: a node's notices reach it in the order it published them. */
export async function settled(pubsub: PubSub): Promise<void> {
  const topic = assistantChannel(randomUUID());
  let heard = false;
  const leave = pubsub.subscribe(topic, () => (heard = true));
  pubsub.publish(topic, { type: 'log.appended' });
  await waitFor('the marker', () => heard);
  leave();
}
