/**
 * The backend's shared log (engine/reasoning/shared-log.ts) on the machine's PostgreSQL: several nodes
 * deciding on one job at once take turns and each decides on what the last left; a node folds what the
 * others committed; a node with too many decisions waiting refuses the next at once; a node starts from
 * the newest snapshot a node took, passing over one it cannot use.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { SharedBackendLog, type SharedLogOptions } from '../../engine/reasoning/shared-log.js';
import { BackendProjection } from '../../engine/reasoning/projection.js';
import type { BackendState } from '../../engine/reasoning/backend-state.js';
import { backendSnapshotCodec } from '../../engine/reasoning/snapshot.js';
import { systemClock } from '../../engine/core/clock.js';
import { backendStreamOf, type BackendEvent } from '../../machines/reasoning/backend-events.js';
import { jobDecider, type JobCommand } from '../../machines/reasoning/job-decider.js';
import { PgEventLog } from '../../storage/postgres/event-log.js';
import { POSTGRES_URL, testSchema } from '../support/postgres.js';
import { UNPARTITIONED } from '../support/backend-events.js';

const opened: Array<{ shared: SharedBackendLog<unknown>; log: PgEventLog<BackendEvent> }> = [];
afterEach(async () => {
  for (const { shared, log } of opened.splice(0)) {
    await shared.close();
    await log.close();
  }
});

/** A node: its own connection pool, projection and dispatch, on the schema. */
async function node(schema: string, options: Partial<Pick<SharedLogOptions, 'maxQueued' | 'snapshotEveryEvents'>> = {}) {
  const log = await PgEventLog.open<BackendEvent>({ url: POSTGRES_URL, schema, streamOf: backendStreamOf });
  const projection = new BackendProjection();
  const reported: string[] = [];
  const shared = new SharedBackendLog<BackendState>(log, {
    clock: systemClock,
    report: (error, { what }) => reported.push(`${what}: ${String(error)}`),
    ...options,
  });
  opened.push({ shared, log });
  const dispatched: Array<{ type: string; own: boolean }> = [];
  let folded = 0;
  await shared.start({
    ...UNPARTITIONED,
    codec: backendSnapshotCodec(projection),
    fold: (event) => projection.apply(event),
    foldCommitted: (event) => {
      folded += 1;
      projection.apply(event);
    },
    restore: (state) => projection.restore(state ?? new BackendProjection().state()),
    dispatch: (events, own) => dispatched.push(...events.map(({ type }) => ({ type, own }))),
  });
  return { log, shared, projection, dispatched, reported, folded };
}

const INTEGRATION = 'b8a7c1f0-0000-4000-8000-000000000001';

function create(job_id: string): JobCommand {
  return {
    type: 'create',
    job_id,
    integration_id: INTEGRATION,
    purpose: 'live_analysis',
    payload: { session_id: 's', transcript: [] },
    byo: false,
    response_schema: { type: 'object' },
    provider_kind: 'assistant-relay',
    deadline_at: 61_000,
    at: 1_000,
  };
}

it('nodes deciding on one job at once take turns: one creates it, every other sees a duplicate, and all fold the same job', async () => {
  const schema = testSchema();
  const nodes = [await node(schema), await node(schema), await node(schema)];
  const job_id = randomUUID();
  const outcomes = await Promise.all(
    nodes.flatMap(({ shared, projection }) =>
      [1, 2].map(() => shared.decide(INTEGRATION, () => jobDecider.decide(create(job_id), projection.job(INTEGRATION, job_id)))),
    ),
  );
  expect(outcomes.filter((outcome) => outcome === 'created')).toHaveLength(1);
  expect(outcomes.filter((outcome) => outcome === 'duplicate')).toHaveLength(5);
  for (const { shared, projection, dispatched } of nodes) {
    await shared.caughtUp();
    expect(projection.job(INTEGRATION, job_id)?.context.job_id).toBe(job_id);
    // Dispatched once on every node: by the one that decided it as its own, by the others as read.
    expect(dispatched.filter(({ type }) => type === 'job.created')).toHaveLength(1);
  }
  expect(nodes.map(({ dispatched }) => dispatched.find(({ type }) => type === 'job.created')!.own).filter(Boolean)).toHaveLength(1);
});

it('a node with as many decisions waiting as it may take refuses the next at once, as if the store were away', async () => {
  const { shared, projection } = await node(testSchema(), { maxQueued: 2 });
  const decide = () => shared.decide(INTEGRATION, () => jobDecider.decide(create(randomUUID()), undefined));
  const [first, second, third] = [decide(), decide(), decide()];
  await expect(third).rejects.toMatchObject({ name: 'StoreBehindError', code: 'event_log_unreachable' });
  expect(await Promise.all([first, second])).toEqual(['created', 'created']);
  expect(projection.allOpenJobs()).toHaveLength(2);
});

it('a node takes snapshots of its commits; a start folds only what came after the newest, and passes over one it cannot read', async () => {
  const schema = testSchema();
  const first = await node(schema, { snapshotEveryEvents: 5 });
  for (let i = 0; i < 12; i += 1) {
    const job_id = randomUUID();
    await first.shared.decide(INTEGRATION, () => jobDecider.decide(create(job_id), first.projection.job(INTEGRATION, job_id)));
  }
  await first.shared.close();
  const kept = await first.log.snapshots();
  // One every five commits of its own and one as it stopped, the two newest kept.
  expect(kept.map(({ position }) => position)).toEqual([12, 10]);
  const second = await node(schema);
  expect(second.folded).toBe(0);
  expect(second.projection.allOpenJobs()).toHaveLength(12);
  expect(second.reported).toEqual([]);

  // The newest snapshot unreadable: passed over, said, and the one before it used.
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  await client.query(`UPDATE ${schema}.snapshots SET data = 'not a snapshot' WHERE position = 12`);
  await client.end();
  const third = await node(schema);
  expect([third.folded, third.projection.allOpenJobs().length]).toEqual([2, 12]);
  expect(third.reported).toEqual([expect.stringMatching(/^using the snapshot at position 12: /)]);
});
