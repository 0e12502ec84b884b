/**
 * The leases of the partitioned log (storage/postgres/partition-leases.ts) on the machine's PostgreSQL: a
 * partition has one owner at a time, a new owner takes a greater token, an append under a lost lease
 * commits nothing, a lease expires by the database's clock, and only live partitions are orphans.
 */
import { afterEach, expect, it } from 'vitest';
import { FencedError } from '../../storage/errors.js';
import type { Fence } from '../../storage/partitions.js';
import type { PgPartitionedLog } from '../../storage/postgres/partitioned-log.js';
import { testSchema } from '../support/postgres.js';
import { event, openPartitionedLog, type TestEvent } from '../support/partitioned-log.js';

let log: PgPartitionedLog<TestEvent> | undefined;
afterEach(async () => {
  await log?.close();
  log = undefined;
});

async function open(): Promise<PgPartitionedLog<TestEvent>> {
  log = await openPartitionedLog(testSchema());
  return log;
}

const A = 'b8a7c1f0-0000-4000-8000-00000000000a';
const LONG = 60_000;
/** Long enough to claim and append within, short enough to wait out. */
const SHORT = 200;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('one owner at a time: a claim again keeps the token, a takeover bumps it, and the old fence renews and appends nothing', async () => {
  const log = await open();
  const first = await log.claim(A, 'n1', LONG, false);
  expect(first).toEqual({ partition: A, node: 'n1', token: 1 });
  expect(await log.claim(A, 'n2', LONG, false)).toBeUndefined();
  expect(await log.claim(A, 'n1', LONG, false)).toEqual(first);
  expect(await log.renew('n1', [first!], LONG)).toEqual([first]);

  await log.append(A, 0, () => ({ events: [event(1)] }), { node: 'n1', fence: first! });
  const taken = await log.claim(A, 'n2', LONG, true);
  expect(taken).toEqual({ partition: A, node: 'n2', token: 2 });
  expect(await log.renew('n1', [first!], LONG)).toEqual([]);

  let decided = false;
  const stale = log.append(
    A,
    1,
    () => {
      decided = true;
      return { events: [event(2)] };
    },
    { node: 'n1', fence: first! },
  );
  await expect(stale).rejects.toBeInstanceOf(FencedError);
  await expect(stale).rejects.toMatchObject({ code: 'event_log_fenced', fence: first });
  expect(decided).toBe(false);
  await log.append(A, 1, () => ({ events: [event(3)] }), { node: 'n2', fence: taken! });
  const { rows } = await log.connections.query('SELECT version, node, fence FROM partition_events ORDER BY version');
  expect(rows).toEqual([
    { version: '1', node: 'n1', fence: '1' },
    { version: '2', node: 'n2', fence: '2' },
  ]);
});

it('a lease that runs out while the decision is made: the append commits nothing', async () => {
  const log = await open();
  const fence = await log.claim(A, 'n1', SHORT, false);
  const late = log.append(
    A,
    0,
    () => {
      // A node paused past its lease (a long GC, a frozen VM), in the middle of a decision.
      const until = Date.now() + SHORT + 100;
      while (Date.now() < until);
      return { events: [event(1)], live: true };
    },
    { node: 'n1', fence: fence! },
  );
  await expect(late).rejects.toBeInstanceOf(FencedError);
  expect(await log.read(A, 0)).toEqual([]);
  expect(await log.versions([A])).toEqual(new Map([[A, 0]]));
  expect(await log.claimOrphans('n2', LONG, 10)).toEqual([]);
});

it('a lease runs out by the clock of the database: then another node claims it, with a greater token', async () => {
  const log = await open();
  const first = await log.claim(A, 'n1', SHORT, false);
  expect(await log.claim(A, 'n2', LONG, false)).toBeUndefined();
  await sleep(SHORT + 100);
  expect(await log.claim(A, 'n2', LONG, false)).toEqual({ partition: A, node: 'n2', token: first!.token + 1 });
  await expect(log.append(A, 0, () => ({ events: [event(1)] }), { node: 'n1', fence: first! })).rejects.toBeInstanceOf(FencedError);
});

it('renews only the leases the node still holds, with their tokens', async () => {
  const log = await open();
  const [a, b, c] = ['a', 'b', 'c'];
  const held = [
    (await log.claim(a, 'n1', SHORT, false))!,
    (await log.claim(b, 'n1', SHORT, false))!,
    (await log.claim(c, 'n1', SHORT, false))!,
  ];
  await log.claim(b, 'n2', LONG, true);
  const forged: Fence = { partition: c, node: 'n1', token: 7 };
  const renewed = await log.renew('n1', [held[0]!, held[1]!, forged], LONG);
  expect(renewed).toEqual([held[0]]);
  await sleep(SHORT + 100);
  // a's renewed lease holds past the short one; c's was not renewed (wrong token) and ran out.
  expect(await log.claim(a, 'n3', LONG, false)).toBeUndefined();
  expect(await log.claim(c, 'n3', LONG, false)).toEqual({ partition: c, node: 'n3', token: 2 });
});

it('release: another node may claim at once, with a greater token; a stale fence releases nothing', async () => {
  const log = await open();
  const first = (await log.claim(A, 'n1', LONG, false))!;
  await log.release(first);
  const second = await log.claim(A, 'n2', LONG, false);
  expect(second).toEqual({ partition: A, node: 'n2', token: 2 });
  await log.release(first);
  expect(await log.claim(A, 'n3', LONG, false)).toBeUndefined();
  await expect(log.append(A, 0, () => ({ events: [event(1)] }), { node: 'n1', fence: first })).rejects.toBeInstanceOf(FencedError);
});

it('orphans: live partitions whose lease ran out, each claimed with the next token, up to the limit', async () => {
  const log = await open();
  const live = (partition: string) => log.append(partition, 0, () => ({ events: [event(1)], live: true }), { node: 'n1' });
  for (const partition of ['died', 'died too', 'alive', 'never owned']) await live(partition);
  await log.append('idle', 0, () => ({ events: [event(1)], live: false }), { node: 'n1' });
  await log.claim('idle', 'n1', SHORT, false);
  await log.claim('died', 'n1', SHORT, false);
  await log.claim('died too', 'n1', SHORT, false);
  await log.claim('alive', 'n1', LONG, false);
  await sleep(SHORT + 100);

  const claimed = await log.claimOrphans('n2', LONG, 2);
  expect(claimed).toHaveLength(2);
  const rest = await log.claimOrphans('n3', LONG, 10);
  expect([...claimed, ...rest].sort((x, y) => x.partition.localeCompare(y.partition))).toEqual([
    { partition: 'died', node: expect.stringMatching(/^n[23]$/), token: 2 },
    { partition: 'died too', node: expect.stringMatching(/^n[23]$/), token: 2 },
    { partition: 'never owned', node: expect.stringMatching(/^n[23]$/), token: 1 },
  ]);
  expect(await log.claimOrphans('n4', LONG, 10)).toEqual([]);
  // Released, all are orphans again at once, but one no longer live.
  await log.append('died', 1, () => ({ events: [], live: false }), { node: 'n1' });
  for (const fence of [...claimed, ...rest]) await log.release(fence);
  expect((await log.claimOrphans('n4', LONG, 10)).map(({ partition }) => partition).sort()).toEqual(['died too', 'never owned']);
});
