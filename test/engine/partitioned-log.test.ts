/**
 * The backend's log partitioned by integration (engine/reasoning/partitioned-log.ts) on the machine's
 * PostgreSQL: nodes deciding on one job at once take turns in its integration's partition; a node holds
 * only the partitions it is asked for, and lets an idle one go; a decision that completes a pairing
 * creates its integration's partition; a node with too many decisions waiting refuses the next; a
 * partition loads from its newest snapshot, and is folded whole when that one cannot be read; an owner's
 * decision commits only while its lease holds.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.js';
import { LogJobStore } from '../../engine/reasoning/job-store.js';
import { projectionParts } from '../../engine/reasoning/loop.js';
import { LeasedOwnership, SoleOwnership, type Ownership } from '../../engine/reasoning/ownership.js';
import { PartitionedBackendLog, type PartitionedLogOptions } from '../../engine/reasoning/partitioned-log.js';
import { BackendProjection } from '../../engine/reasoning/projection.js';
import { backendStreamOf, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { jobDecider } from '../../machines/reasoning/job-decider.js';
import { SERVICE_PARTITION } from '../../storage/partitions.js';
import { PgPartitionedLog } from '../../storage/postgres/partitioned-log.js';
import { integrationCreated } from '../support/backend-events.js';
import { createCommand } from '../support/job-store-contract.js';
import { POSTGRES_URL, testSchema } from '../support/postgres.js';
import { eventually } from '../support/wait.js';

const opened: Array<{ partitioned: PartitionedBackendLog; log: PgPartitionedLog<BackendEvent>; ownership: Ownership }> = [];
afterEach(async () => {
  for (const { partitioned, log, ownership } of opened.splice(0)) {
    await ownership.stop();
    await partitioned.close();
    await log.close();
  }
});

type NodeOptions = Partial<Pick<PartitionedLogOptions, 'maxQueued' | 'snapshotEveryEvents' | 'idleMs'>> & { readonly leaseMs?: number };

/** A node: its own connection pool, projection and dispatch, on the schema; its ownership leased when `leaseMs` is given. */
async function node(schema: string, options: NodeOptions = {}) {
  const log = await PgPartitionedLog.open<BackendEvent>({ url: POSTGRES_URL, schema, streamOf: backendStreamOf });
  const projection = new BackendProjection();
  const reported: string[] = [];
  const report = (error: unknown, { what }: { what: string }) => reported.push(`${what}: ${String(error)}`);
  const id = randomUUID();
  const { leaseMs, ...logOptions } = options;
  const ownership = leaseMs === undefined ? new SoleOwnership() : new LeasedOwnership(log, id, systemClock, report, { leaseMs });
  const partitioned = new PartitionedBackendLog(log, { node: id, clock: systemClock, ownership, report, ...logOptions });
  opened.push({ partitioned, log, ownership });
  const store = new LogJobStore(projection, partitioned);
  const dispatched: Array<{ type: string; own: boolean }> = [];
  const counted = { folded: 0 };
  const parts = projectionParts(projection, store);
  await partitioned.start({
    ...parts,
    foldCommitted: (event) => {
      counted.folded += 1;
      parts.foldCommitted(event);
    },
    inUse: () => false,
    dispatch: (events, own) => {
      for (const event of events) if (event.type.startsWith('job.')) store.committed(event as never);
      dispatched.push(...events.map(({ type }) => ({ type, own })));
    },
  });
  ownership.listen({ gained: () => {}, lost: () => {}, needed: () => true });
  return { id, log, partitioned, projection, dispatched, reported, counted, ownership };
}

const I1 = 'b8a7c1f0-0000-4000-8000-000000000001';
const I2 = 'b8a7c1f0-0000-4000-8000-000000000002';

type Node = Awaited<ReturnType<typeof node>>;

/** Creates a job in the integration's partition through the node. */
function createJob({ partitioned, projection }: Node, job_id: string, integration_id = I1) {
  return partitioned.decide(integration_id, () =>
    jobDecider.decide(createCommand(job_id, integration_id), projection.job(integration_id, job_id)),
  );
}

it('nodes deciding on one job at once take turns in its partition: one creates it, every other sees a duplicate, and all fold the same job', async () => {
  const schema = testSchema();
  const nodes = [await node(schema), await node(schema), await node(schema)];
  const job_id = randomUUID();
  const outcomes = await Promise.all(nodes.flatMap((n) => [1, 2].map(() => createJob(n, job_id))));
  expect(outcomes.filter((outcome) => outcome === 'created')).toHaveLength(1);
  expect(outcomes.filter((outcome) => outcome === 'duplicate')).toHaveLength(5);
  for (const { partitioned, projection, dispatched } of nodes) {
    await partitioned.caughtUp(I1);
    expect(projection.job(I1, job_id)?.context.job_id).toBe(job_id);
    // Dispatched once on every node: by the one that decided it as its own, by the others as read.
    expect(dispatched.filter(({ type }) => type === 'job.created')).toHaveLength(1);
  }
  expect(nodes.map(({ dispatched }) => dispatched.find(({ type }) => type === 'job.created')!.own).filter(Boolean)).toHaveLength(1);
});

it('a node holds only the partitions it is asked for, and lets one go once it is idle', async () => {
  const schema = testSchema();
  const writer = await node(schema);
  for (const integration of [I1, I2]) await createJob(writer, randomUUID(), integration);
  const reader = await node(schema, { idleMs: 100 });
  // The service's partition from the start; no integration's until asked.
  expect(reader.partitioned.heldIntegrations()).toEqual([]);
  await reader.partitioned.caughtUp(I1);
  expect(reader.partitioned.heldIntegrations()).toEqual([I1]);
  expect([reader.projection.openJobs(I1).length, reader.projection.openJobs(I2).length]).toEqual([1, 0]);
  expect(reader.counted.folded).toBe(1);
  await eventually(
    'I1 let go',
    () => reader.partitioned.heldIntegrations(),
    (held) => held.length === 0,
    { timeoutMs: 15_000 },
  );
  expect(reader.projection.openJobs(I1)).toEqual([]);
  // Asked again, it is loaded again.
  await reader.partitioned.caughtUp(I1);
  expect(reader.projection.openJobs(I1)).toHaveLength(1);
});

it("a decision in the service's partition creates an integration's: both appended at once, the new one held by its maker", async () => {
  const schema = testSchema();
  const maker = await node(schema);
  await maker.partitioned.decide(SERVICE_PARTITION, () => ({ events: [integrationCreated(I2, 1_000)], outcome: undefined }));
  expect(maker.partitioned.heldIntegrations()).toEqual([I2]);
  expect(maker.projection.integration(I2)?.context.integration_id).toBe(I2);
  expect((await maker.log.versions([I2, SERVICE_PARTITION])).get(I2)).toBe(1);
  const other = await node(schema);
  await other.partitioned.caughtUp(I2);
  expect(other.projection.integration(I2)?.context.integration_id).toBe(I2);
  // Made twice, the second append fails whole: a partition is born once.
  await expect(
    other.partitioned.decide(SERVICE_PARTITION, () => ({ events: [integrationCreated(I2, 2_000)], outcome: undefined })),
  ).rejects.toMatchObject({ code: 'event_log_partition_exists' });
});

it('a node with as many decisions waiting as it may take refuses the next at once, as if the store were away', async () => {
  const n = await node(testSchema(), { maxQueued: 2 });
  const [first, second, third] = [createJob(n, randomUUID()), createJob(n, randomUUID()), createJob(n, randomUUID())];
  await expect(third).rejects.toMatchObject({ name: 'StoreBehindError', code: 'event_log_unreachable' });
  expect(await Promise.all([first, second])).toEqual(['created', 'created']);
  expect(n.projection.openJobs(I1)).toHaveLength(2);
});

it('a partition is snapshotted as it grows; a node loads it from the newest snapshot, and folds it whole when that one cannot be read', async () => {
  const schema = testSchema();
  const first = await node(schema, { snapshotEveryEvents: 5 });
  for (let i = 0; i < 12; i += 1) await createJob(first, randomUUID());
  await first.partitioned.close();
  const second = await node(schema);
  await second.partitioned.caughtUp(I1);
  // Snapshots at 5 and 10, one more as the first node stopped (12): loaded from 12, nothing after it to fold.
  expect([second.counted.folded, second.projection.openJobs(I1).length, second.reported]).toEqual([0, 12, []]);

  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  await client.query(`UPDATE ${schema}.partition_snapshots SET data = 'not a snapshot' WHERE partition = $1`, [I1]);
  await client.end();
  const third = await node(schema);
  await third.partitioned.caughtUp(I1);
  expect([third.counted.folded, third.projection.openJobs(I1).length]).toEqual([12, 12]);
  expect(third.reported).toEqual([expect.stringMatching(/^using the snapshot of partition .* at version 12: /)]);
});

it("an owner's decision commits only while its lease holds: another node's takeover fences the old owner out", async () => {
  const schema = testSchema();
  const a = await node(schema, { leaseMs: 60_000 });
  const b = await node(schema, { leaseMs: 60_000 });
  const job_id = randomUUID();
  await createJob(a, job_id);
  const expire = (n: Node) =>
    n.partitioned.decide(
      I1,
      () => jobDecider.decide({ type: 'expire', integration_id: I1, job_id, at: 62_000 }, n.projection.job(I1, job_id)),
      { owner: true },
    );
  // B owns nothing: refused before the store is asked.
  await expect(expire(b)).rejects.toMatchObject({ name: 'NotOwnerError' });
  expect(await a.ownership.takeOver(I1)).toBe(true);
  expect(await b.ownership.takeOver(I1)).toBe(true);
  // A still believes it owns I1; the store does not.
  expect(a.ownership.owns(I1)).toBe(true);
  // Refused by the store (its fence is stale): it owns nothing now.
  await expect(expire(a)).rejects.toMatchObject({ name: 'NotOwnerError' });
  expect(a.ownership.owns(I1)).toBe(false);
  expect(await expire(b)).toBe('expired');
  const rows = await a.log.read(I1, 0);
  expect(rows.map(({ event }) => event.type)).toEqual(['job.created', 'job.expired']);
});
