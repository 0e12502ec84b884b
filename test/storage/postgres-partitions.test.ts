/**
 * The partitioned log (storage/postgres/partitioned-log.ts) on the machine's PostgreSQL: appends to one
 * partition take turns and each decides on what the last committed, appends to two partitions do not
 * wait on each other, an append creates partitions or nothing, and snapshots and retention stay within
 * their partition. The leases: test/storage/postgres-partition-leases.test.ts.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PartitionExistsError } from '../../storage/errors.js';
import { SERVICE_PARTITION, type AppendDecision, type PartitionEvent } from '../../storage/partitions.js';
import { PgPartitionedLog } from '../../storage/postgres/partitioned-log.js';
import { POSTGRES_URL, testSchema } from '../support/postgres.js';
import { event, openPartitionedLog, type TestEvent } from '../support/partitioned-log.js';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const each of opened.splice(0).reverse()) await each.close();
});

async function node(schema: string): Promise<PgPartitionedLog<TestEvent>> {
  const log = await openPartitionedLog(schema);
  opened.push(log);
  return log;
}

const A = 'b8a7c1f0-0000-4000-8000-00000000000a';
const B = 'b8a7c1f0-0000-4000-8000-00000000000b';

const appending =
  (...events: TestEvent[]) =>
  (): AppendDecision<TestEvent> => ({ events });

const numbers = (events: readonly PartitionEvent<TestEvent>[]) => events.map(({ version, event }) => [version, event.n]);

describe('appends and reads', () => {
  it('numbers each partition from 1, reads after a version, and tells the versions of many partitions in one look', async () => {
    const log = await node(testSchema());
    const first = await log.append(A, 0, appending(event(1), event(2)), { node: 'n1' });
    expect(first).toEqual({
      committed: [],
      appended: [
        { version: 1, event: event(1) },
        { version: 2, event: event(2) },
      ],
      born: [],
    });
    await log.append(B, 0, appending(event(10)), { node: 'n1' });
    const second = await log.append(A, 1, appending(event(3)), { node: 'n2' });
    expect(numbers(second.committed)).toEqual([[2, 2]]);
    expect(numbers(second.appended)).toEqual([[3, 3]]);

    expect(numbers(await log.read(A, 0))).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
    expect(numbers(await log.read(A, 1, 1))).toEqual([[2, 2]]);
    expect(numbers(await log.read(B, 0))).toEqual([[1, 10]]);
    expect(await log.versions([A, B, 'never'])).toEqual(
      new Map([
        [A, 3],
        [B, 1],
        ['never', 0],
      ]),
    );
    expect(await log.partitions('', 10)).toEqual([A, B]);
    expect(await log.partitions(A, 10)).toEqual([B]);
    const { rows } = await log.connections.query(
      'SELECT version, node, fence FROM partition_events WHERE partition = $1 ORDER BY version',
      [A],
    );
    expect(rows).toEqual([
      { version: '1', node: 'n1', fence: null },
      { version: '2', node: 'n1', fence: null },
      { version: '3', node: 'n2', fence: null },
    ]);
  });

  it('hands the decision every event committed after the caller, page after page', async () => {
    const log = await node(testSchema());
    const many = Array.from({ length: 2_500 }, (_, i) => event(i + 1));
    await log.append(A, 0, appending(...many), { node: 'n1' });
    const behind = await log.append(A, 0, appending(event(0)), { node: 'n1' });
    expect(behind.committed.map(({ version }) => version)).toEqual(many.map((_, i) => i + 1));
    expect(behind.appended.map(({ version }) => version)).toEqual([2_501]);
  });

  it('a quote in a partition is data, not SQL', async () => {
    const log = await node(testSchema());
    const odd = "o'brien\\'; DROP TABLE partitions; --";
    await log.append(odd, 0, appending(event(1)), { node: 'n1' });
    expect(numbers((await log.append(odd, 0, appending(), { node: 'n1' })).committed)).toEqual([[1, 1]]);
    expect(await log.versions([odd])).toEqual(new Map([[odd, 1]]));
  });
});

describe('concurrency', () => {
  it.each([0, 3])("two nodes appending to a partition of %i events take turns: the second decides on the first's", async (before) => {
    const schema = testSchema();
    const [one, two] = [await node(schema), await node(schema)];
    if (before > 0) await one.append(A, 0, appending(...Array.from({ length: before }, (_, i) => event(-i))), { node: 'n1' });
    // A connection of the second's pool ready, so that its statements go out while the first holds the lock.
    await two.versions([A]);
    let second: Promise<unknown> | undefined;
    const seenBySecond: number[][] = [];
    await one.append(
      A,
      before,
      () => {
        // The first holds the partition's lock here: the second's statements reach the server meanwhile.
        second = two.append(
          A,
          before,
          (committed) => {
            seenBySecond.push(...numbers(committed));
            return { events: [event(2)] };
          },
          { node: 'n2' },
        );
        return { events: [event(1)] };
      },
      { node: 'n1' },
    );
    await second;
    expect(seenBySecond).toEqual([[before + 1, 1]]);
    expect(numbers(await one.read(A, before))).toEqual([
      [before + 1, 1],
      [before + 2, 2],
    ]);
  });

  it('many appends at once from two nodes: versions without gaps, each decided on all before it', async () => {
    const schema = testSchema();
    const nodes = [await node(schema), await node(schema)];
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => nodes[i % 2]!.append(A, 0, appending(event(i)), { node: `n${i % 2}` })),
    );
    for (const { committed, appended } of results) expect(committed.length).toBe(appended[0]!.version - 1);
    expect(results.map(({ appended }) => appended[0]!.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it("an append to one partition does not wait for another partition's transaction", async () => {
    const schema = testSchema();
    const log = await node(schema);
    await log.append(A, 0, appending(event(1)), { node: 'n1' });
    // Another node's append to A, in flight: its transaction holds A's head, as an append does.
    const other = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
    await other.connect();
    opened.push({ close: () => other.end() });
    await other.query('BEGIN');
    await other.query('SELECT version FROM partitions WHERE partition = $1 FOR UPDATE', [A]);
    let decidedOnA = false;
    const toA = log.append(
      A,
      0,
      () => {
        decidedOnA = true;
        return { events: [event(2)] };
      },
      { node: 'n1' },
    );
    const toB = await log.append(B, 0, appending(event(10)), { node: 'n1' });
    expect(numbers(toB.appended)).toEqual([[1, 10]]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(decidedOnA).toBe(false);
    await other.query('COMMIT');
    expect(numbers((await toA).appended)).toEqual([[2, 2]]);
  });
});

describe('partitions an append creates', () => {
  it('are created with their events from version 1, in the same transaction', async () => {
    const log = await node(testSchema());
    const result = await log.append(
      SERVICE_PARTITION,
      0,
      () => ({ events: [event(1)], born: [{ partition: A, events: [event(5), event(6)] }] }),
      {
        node: 'n1',
      },
    );
    expect(result.born.map(({ partition, appended }) => [partition, numbers(appended)])).toEqual([
      [
        A,
        [
          [1, 5],
          [2, 6],
        ],
      ],
    ]);
    expect(numbers(await log.read(A, 0))).toEqual([
      [1, 5],
      [2, 6],
    ]);
    expect(await log.versions([SERVICE_PARTITION, A])).toEqual(
      new Map([
        [SERVICE_PARTITION, 1],
        [A, 2],
      ]),
    );
  });

  it('one that exists already: PartitionExistsError, and nothing of the append is stored', async () => {
    const log = await node(testSchema());
    await log.append(A, 0, appending(event(1)), { node: 'n1' });
    const refused = log.append(
      SERVICE_PARTITION,
      0,
      () => ({
        events: [event(2)],
        born: [
          { partition: B, events: [event(3)] },
          { partition: A, events: [event(4)] },
        ],
      }),
      { node: 'n1' },
    );
    await expect(refused).rejects.toBeInstanceOf(PartitionExistsError);
    await expect(refused).rejects.toMatchObject({ code: 'event_log_partition_exists', partitions: [A] });
    expect(await log.versions([SERVICE_PARTITION, A, B])).toEqual(
      new Map([
        [SERVICE_PARTITION, 0],
        [A, 1],
        [B, 0],
      ]),
    );
    expect(await log.read(SERVICE_PARTITION, 0)).toEqual([]);
    expect(await log.read(B, 0)).toEqual([]);
    expect(numbers(await log.read(A, 0))).toEqual([[1, 1]]);
    expect(await log.partitions('', 10)).not.toContain(B);
  });
});

describe('snapshots and retention', () => {
  it('keeps the newest two snapshots of each partition', async () => {
    const log = await node(testSchema());
    await log.writeSnapshot(B, 7, 'b7', 1);
    for (const version of [3, 5, 9]) await log.writeSnapshot(A, version, `a${version}`, version);
    expect(await log.snapshot(A)).toEqual({ version: 9, data: 'a9' });
    expect(await log.snapshot(B)).toEqual({ version: 7, data: 'b7' });
    expect(await log.snapshot('never')).toBeUndefined();
    const { rows } = await log.connections.query('SELECT partition, version FROM partition_snapshots ORDER BY partition, version');
    expect(rows).toEqual([
      { partition: A, version: '5' },
      { partition: A, version: '9' },
      { partition: B, version: '7' },
    ]);
  });

  it("removes the named streams' events of one partition before a version, and no others", async () => {
    const log = await node(testSchema());
    await log.append(A, 0, appending(event(1, 's1'), event(2, 's2'), event(3), event(4, 's1'), event(5, 's1')), { node: 'n1' });
    await log.append(B, 0, appending(event(6, 's1')), { node: 'n1' });
    expect(await log.removeStreams(A, ['s1', ''], 5)).toBe(2);
    expect(numbers(await log.readStream(A, 's1'))).toEqual([[5, 5]]);
    expect(numbers(await log.read(A, 0))).toEqual([
      [2, 2],
      [3, 3],
      [5, 5],
    ]);
    expect(numbers(await log.readStream(B, 's1'))).toEqual([[1, 6]]);
  });
});
