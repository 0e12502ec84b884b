/**
 * The backend's one log on PostgreSQL (before it was partitioned by integration) converted into
 * partitions, once, before a node's engine starts (storage/postgres/one-log.ts runs the transaction, the
 * backend's composition root hands it this fold): the one log folded as the engine folded it, from its newest snapshot that decodes and the events after it,
 * and each integration's state, and the service's, written as its partition's first snapshot, so that a
 * node loading a partition gets exactly what the one log's fold had, and an orphan scan finds the
 * integrations with timers (open jobs, an online plugin) to run them again.
 */
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import { SERVICE_PARTITION } from '../../storage/partitions.js';
import type { ConvertedPartition, OneLog } from '../../storage/postgres/one-log.js';
import { inSlices } from '../core/snapshots.js';
import { BackendProjection } from './projection.js';
import { backendSnapshotCodec } from './snapshot.js';

/** The partitions of the one log's fold: every integration's, and the service's. */
export async function partitionsOfOneLog(
  log: OneLog<BackendEvent>,
  report: (error: unknown, context: { readonly what: string }) => void,
): Promise<ConvertedPartition[]> {
  const projection = new BackendProjection();
  const codec = backendSnapshotCodec(projection);
  let position = 0;
  for (const snapshot of await log.snapshots()) {
    // Each one passed over is reported, never trusted, as the one log's nodes did.
    try {
      projection.restore(codec.decode(snapshot.data));
      position = snapshot.position;
      break;
    } catch (error) {
      report(error, { what: `using the one log's snapshot at position ${snapshot.position}` });
    }
  }
  for (let page = await log.read(position); page.length > 0; page = await log.read(position)) {
    for (const { event } of page) projection.apply(event);
    position = page.at(-1)!.position;
  }
  const partitions: ConvertedPartition[] = [
    { partition: SERVICE_PARTITION, live: false, snapshot: await inSlices(codec.encode(projection.service())) },
  ];
  for (const id of projection.integrationIds())
    partitions.push({ partition: id, live: projection.live(id), snapshot: await inSlices(codec.encode(projection.partition(id))) });
  return partitions;
}
