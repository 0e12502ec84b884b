/** Where time and fresh ids come from. The engine passes them to the pure machines as data. */
import { randomBytes, randomUUID } from 'node:crypto';

export interface Clock {
  now(): number;
}

export interface IdSource {
  /** A short lowercase base-36 token for epochs and generations. */
  token(): string;
  /** A message id. */
  uuid(): string;
}

export const systemClock: Clock = { now: () => Date.now() };

export const randomIds: IdSource = {
  token: () => BigInt(`0x${randomBytes(8).toString('hex')}`).toString(36),
  uuid: () => randomUUID(),
};
