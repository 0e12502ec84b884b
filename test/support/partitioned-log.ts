/** The partitioned log (storage/postgres/partitioned-log.ts) for tests: events that carry a number and a stream. */
import { PgPartitionedLog } from '../../storage/postgres/partitioned-log.js';
import { POSTGRES_URL } from './postgres.js';

export interface TestEvent {
  readonly type: 'noted';
  readonly at: number;
  readonly n: number;
  readonly stream?: string;
}

export function event(n: number, stream?: string): TestEvent {
  return { type: 'noted', at: 1_700_000_000_000 + n, n, ...(stream === undefined ? {} : { stream }) };
}

/** A node's log on `schema`: its own pool. */
export function openPartitionedLog(schema: string): Promise<PgPartitionedLog<TestEvent>> {
  return PgPartitionedLog.open<TestEvent>({ url: POSTGRES_URL, schema, streamOf: (e) => e.stream ?? '' });
}
