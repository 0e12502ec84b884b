/**
 * Where `assistant-relay backend` keeps its log, from its flags: the embedded SQLite file (`--db`, the
 * default) or PostgreSQL several nodes share (`--store`, with its schema, pool, broker and the settings of
 * a node of a service); a flag of a shared store given without `--store` is a usage error.
 */
import type { BackendRelayOptions } from '../backend/relay.js';
import { BROKER_SCHEMES } from '../brokers/connect.js';
import { DEFAULT_NAMESPACE, NAMESPACE } from '../brokers/broker.js';
import { DEFAULT_SCHEMA, SCHEMA_NAME } from '../../storage/postgres/connection.js';
import { integer, parseDuration, UsageError } from './flags.js';

/** The flags that say where the log is. */
export type StoreFlag =
  | 'db'
  | 'store'
  | 'schema'
  | 'pubsub'
  | 'namespace'
  | 'pool'
  | 'store-timeout'
  | 'store-queue'
  | 'max-held-integrations'
  | 'ownership-lease';

export const DEFAULT_DB = 'data/backend.db';

/** The log the flags name, and what the `serving` line says of it (never a password). */
export function whereOf(get: (name: StoreFlag) => string | undefined): {
  options: Pick<BackendRelayOptions, 'db' | 'store' | 'broker'>;
  said: Record<string, unknown>;
} {
  const store = get('store');
  const pubsub = get('pubsub');
  if (store === undefined) {
    for (const flag of [
      'pubsub',
      'schema',
      'namespace',
      'pool',
      'store-timeout',
      'store-queue',
      'max-held-integrations',
      'ownership-lease',
    ] as const)
      if (get(flag) !== undefined) throw new UsageError(`--${flag} goes with --store`);
    const db = get('db') ?? DEFAULT_DB;
    return { options: { db }, said: { db } };
  }
  if (get('db') !== undefined) throw new UsageError('--db and --store name two logs: give one');
  const storeUrl = urlOf('store', store, ['postgres:', 'postgresql:']);
  const schema = get('schema') ?? DEFAULT_SCHEMA;
  if (!SCHEMA_NAME.test(schema))
    throw new UsageError(`--schema must be lowercase letters, digits and _ (at most 63), not ${JSON.stringify(schema)}`);
  const namespace = get('namespace') ?? DEFAULT_NAMESPACE;
  if (!NAMESPACE.test(namespace))
    throw new UsageError(`--namespace must be letters, digits, _ and - (at most 64), not ${JSON.stringify(namespace)}`);
  const pool = get('pool');
  const timeout = get('store-timeout');
  const brokerUrl = pubsub === undefined ? undefined : urlOf('pubsub', pubsub, BROKER_SCHEMES);
  const options = {
    store: {
      url: store,
      schema,
      ...(pool === undefined ? {} : { poolSize: integer('pool', pool, 1, 1_000) }),
      ...(timeout === undefined ? {} : { connectTimeoutMs: parseDuration('store-timeout', timeout) }),
    },
    ...(brokerUrl === undefined ? {} : { broker: { url: brokerUrl.href, namespace } }),
  };
  return {
    options,
    said: {
      store: withoutPassword(storeUrl),
      schema,
      ...(brokerUrl === undefined ? {} : { pubsub: withoutPassword(brokerUrl), namespace }),
    },
  };
}

function urlOf(flag: string, text: string, schemes: readonly string[]): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--${flag} must be a URL (${schemes.map((s) => `${s}//`).join(' or ')}…), not ${JSON.stringify(text)}`);
  }
  if (!schemes.includes(url.protocol))
    throw new UsageError(`--${flag} must start ${schemes.map((s) => `${s}//`).join(' or ')}, not ${url.protocol}//`);
  return url;
}

function withoutPassword(url: URL): string {
  const shown = new URL(url.href);
  if (shown.password !== '') shown.password = '***';
  return shown.href;
}
