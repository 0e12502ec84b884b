/** The brokers of this machine, on loopback (`.ci/run` starts any that is not running); each test takes a namespace of its own. */
import { connectBroker } from '../../src/adapters/brokers/connect.js';

export const NATS_URL = process.env.ASSISTANT_RELAY_TEST_NATS ?? 'nats://127.0.0.1:4222';
export const REDIS_URL = process.env.ASSISTANT_RELAY_TEST_REDIS ?? 'redis://127.0.0.1:6379';

/** Removes a test's namespace from the broker (its stream or key). */
export async function removeNamespace(url: string, namespace: string): Promise<void> {
  const broker = await connectBroker({ url, namespace, report: () => {} });
  await broker.remove();
  await broker.close();
}
