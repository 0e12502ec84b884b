/**
 * The brokers of this machine, on loopback (`.ci/run` starts any that is not running). The broker's own
 * tests take a namespace each and remove it; the clusters of the suites share one namespace, kept between
 * runs: its notices only make nodes fold (each integration is a test's own), and a NATS server whose
 * streams are created and deleted all the time fails a create now and then.
 */
import { connectBroker } from '../../adapters/brokers/connect.js';

export const NATS_URL = process.env.ASSISTANT_RELAY_TEST_NATS ?? 'nats://127.0.0.1:4222';
export const REDIS_URL = process.env.ASSISTANT_RELAY_TEST_REDIS ?? 'redis://127.0.0.1:6379';

/** The namespace every cluster of the suites (test/support/backend.ts) shares. */
export const CLUSTER_NAMESPACE = 'test_clusters';

/** Removes a test's namespace from the broker (its stream or key). */
export async function removeNamespace(url: string, namespace: string): Promise<void> {
  const broker = await connectBroker({ url, namespace, report: () => {} });
  await broker.remove();
  await broker.close();
}
