/** The default `JobStore`, over a real SQLite event log, held to the contract every store must meet. */
import { join } from 'node:path';
import { Appender } from '../../src/engine/append.js';
import { LogJobStore } from '../../src/engine/backend/job-store.js';
import { BackendProjection } from '../../src/engine/backend/projection.js';
import { backendStreamOf, isJobEvent, type BackendEvent } from '../../src/machines/backend-events.js';
import type { JobEvent } from '../../src/machines/job-events.js';
import { EventLog } from '../../src/storage/event-log.js';
import { describeJobStore } from '../support/job-store-contract.js';

describeJobStore('LogJobStore over SQLite', async (dir) => {
  const log = EventLog.open<BackendEvent>({ path: join(dir, 'backend.db'), streamOf: backendStreamOf });
  const projection = new BackendProjection();
  let store: LogJobStore | undefined;
  const fold = (event: BackendEvent) => {
    projection.apply(event);
    if (isJobEvent(event)) store!.folded(event);
  };
  const appender = new Appender(log, fold, (error) => {
    throw error;
  });
  store = new LogJobStore(projection, appender);
  for (const { event } of log.read()) {
    fold(event);
    if (isJobEvent(event)) store.committed(event);
  }
  const committed: JobEvent[] = [];
  log.onCommit((events) => {
    for (const event of events.filter(isJobEvent)) {
      store!.committed(event);
      committed.push(event);
    }
  });
  return { store, committed, close: () => log.close() };
});
