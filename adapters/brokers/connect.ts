/** The broker a URL names: `nats://` (core NATS) or `redis://` (Streams). */
import type { BrokerOptions, BrokerPubSub } from './broker.js';
import { NatsPubSub } from './nats.js';
import { RedisPubSub } from './redis.js';

export const BROKER_SCHEMES = ['nats:', 'redis:'] as const;

export function connectBroker(options: BrokerOptions): Promise<BrokerPubSub> {
  const { protocol } = new URL(options.url);
  if (protocol === 'nats:') return NatsPubSub.connect(options);
  if (protocol === 'redis:') return RedisPubSub.connect(options);
  throw new RangeError(`a broker URL starts nats:// or redis://, not ${protocol}//`);
}
