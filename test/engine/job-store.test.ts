/** `LogJobStore` over each log a backend can have, held to the contract every store must meet. */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { LocalBackendLog, type BackendLog } from '../../engine/reasoning/backend-log.js';
import { LogJobStore } from '../../engine/reasoning/job-store.js';
import { BackendProjection } from '../../engine/reasoning/projection.js';
import type { BackendState } from '../../engine/reasoning/backend-state.js';
import { projectionParts } from '../../engine/reasoning/loop.js';
import { SoleOwnership } from '../../engine/reasoning/ownership.js';
import { PartitionedBackendLog } from '../../engine/reasoning/partitioned-log.js';
import { systemClock } from '../../engine/core/clock.js';
import { backendStreamOf, isJobEvent, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import type { JobEvent } from '../../machines/reasoning/job-events.js';
import { EventLog } from '../../storage/event-log.js';
import { PgPartitionedLog } from '../../storage/postgres/partitioned-log.js';
import { describeJobStore, type OpenedJobStore } from '../support/job-store-contract.js';
import { POSTGRES_URL, testSchema } from '../support/postgres.js';

async function storeOver(
  projection: BackendProjection,
  log: BackendLog<BackendState>,
  close: () => Promise<void>,
): Promise<OpenedJobStore> {
  const store = new LogJobStore(projection, log);
  const committed: JobEvent[] = [];
  await log.start({
    ...projectionParts(projection, store),
    inUse: () => false,
    dispatch: (events) => {
      for (const event of events.filter(isJobEvent)) {
        store.committed(event);
        committed.push(event);
      }
    },
  });
  return {
    store,
    committed,
    async close() {
      await log.close();
      await close();
    },
  };
}

describeJobStore('LogJobStore over SQLite', async (dir) => {
  const log = EventLog.open<BackendEvent>({ path: join(dir, 'backend.db'), streamOf: backendStreamOf });
  const projection = new BackendProjection();
  const local = new LocalBackendLog<BackendState>(log, {
    clock: systemClock,
    onFatal: (error) => {
      throw error;
    },
    report: (error) => {
      throw error;
    },
  });
  return storeOver(projection, local, () => log.close());
});

const schemas = new Map<string, string>();

describeJobStore('LogJobStore over PostgreSQL, partitioned by integration', async (dir) => {
  // The same folder is the same schema: opening it again is a restart.
  const schema = schemas.get(dir) ?? testSchema();
  schemas.set(dir, schema);
  const log = await PgPartitionedLog.open<BackendEvent>({ url: POSTGRES_URL, schema, streamOf: backendStreamOf });
  const projection = new BackendProjection();
  const report = (error: unknown) => {
    throw error;
  };
  const node = randomUUID();
  const partitioned = new PartitionedBackendLog(log, { node, clock: systemClock, ownership: new SoleOwnership(), report });
  return storeOver(projection, partitioned, () => log.close());
});
