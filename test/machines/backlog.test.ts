import { describe, expect, it } from 'vitest';
import {
  emptyBacklog,
  issuedCursor,
  resume,
  retain,
  type Backlog,
  type RetainedReply,
  type BacklogLimits,
} from '../../machines/chat/backlog.js';
import { windowToArray } from '../../machines/core/window.js';

const KiB = 1024;
const MiB = 1024 * KiB;

/** Part 8: at least 64 terminal replies or 1 MiB, whichever runs out first. */
const SPEC: BacklogLimits = { maxReplies: 64, maxBytes: MiB, ledgerMaxTasks: 1024, maxSpans: 64 };

function reply(seq: number, bytes = 1, epoch = 'e1', generation = 'g1'): RetainedReply {
  return { seq, id: `${epoch}:${generation}:${seq}`, task_id: `t${seq}`, data: `{"n":${seq}}`, bytes };
}

/** Retains seqs lastSeq+1 .. lastSeq+count, each of `bytes`, all in `epoch`. */
function retainMany(backlog: Backlog, count: number, retention: BacklogLimits, bytes = 1, epoch = 'e1'): Backlog {
  let b = backlog;
  for (let i = 0; i < count; i += 1) b = retain(b, epoch, reply(b.lastSeq + 1, bytes, epoch, b.generation), retention);
  return b;
}

const seqs = (b: Backlog) => windowToArray(b.replies).map((r) => r.seq);
const ledgerIds = (b: Backlog) => windowToArray(b.ledger).map((e) => e.task_id);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const taskIds = (from: number, to: number) => range(from, to).map((n) => `t${n}`);

describe('retain: eviction by count (64)', () => {
  it.each([
    { retained: 1, kept: range(1, 1), ledger: [] },
    { retained: 64, kept: range(1, 64), ledger: [] },
    { retained: 65, kept: range(2, 65), ledger: taskIds(1, 1) },
    { retained: 70, kept: range(7, 70), ledger: taskIds(1, 6) },
  ])('after $retained one-byte replies keeps seqs $kept.0..; ledger $ledger', ({ retained, kept, ledger }) => {
    const b = retainMany(emptyBacklog('g1'), retained, SPEC);
    expect(seqs(b)).toEqual(kept);
    expect(b.bytes).toBe(kept.length);
    expect(ledgerIds(b)).toEqual(ledger);
    expect(b.lastSeq).toBe(retained);
  });
});

describe('retain: eviction by bytes (1 MiB)', () => {
  it.each([
    { size: 256 * KiB, retained: 4, kept: range(1, 4), bytes: MiB },
    { size: 256 * KiB, retained: 5, kept: range(2, 5), bytes: MiB },
    { size: 256 * KiB + 1, retained: 4, kept: range(2, 4), bytes: 3 * (256 * KiB + 1) },
    { size: 300 * KiB, retained: 10, kept: range(8, 10), bytes: 900 * KiB },
  ])('replies of $size bytes, $retained retained: keeps $kept', ({ size, retained, kept, bytes }) => {
    const b = retainMany(emptyBacklog('g1'), retained, SPEC, size);
    expect(seqs(b)).toEqual(kept);
    expect(b.bytes).toBe(bytes);
    expect(ledgerIds(b)).toEqual(taskIds(1, retained - kept.length));
  });
});

describe('retain: whichever bound runs out first', () => {
  it.each([
    // 64 x 16 KiB is exactly 1 MiB: both bounds are met, neither is exceeded.
    { size: 16 * KiB, kept: 64, bytes: MiB },
    { size: 16 * KiB + 1, kept: 63, bytes: 63 * (16 * KiB + 1) },
    { size: 1 * KiB, kept: 64, bytes: 64 * KiB },
    { size: 100 * KiB, kept: 10, bytes: 1000 * KiB },
  ])('100 replies of $size bytes keep the newest $kept', ({ size, kept, bytes }) => {
    const b = retainMany(emptyBacklog('g1'), 100, SPEC, size);
    expect(seqs(b)).toEqual(range(101 - kept, 100));
    expect(b.bytes).toBe(bytes);
    expect(ledgerIds(b)).toEqual(taskIds(1, 100 - kept));
  });
});

describe('retain: the newest reply always stays', () => {
  it('a reply larger than the byte bound is kept alone', () => {
    const small = retainMany(emptyBacklog('g1'), 3, SPEC, 10);
    const big = retain(small, 'e1', reply(4, 2 * MiB), SPEC);
    expect(seqs(big)).toEqual([4]);
    expect(big.bytes).toBe(2 * MiB);
    expect(ledgerIds(big)).toEqual(['t1', 't2', 't3']);
  });

  it('the next reply evicts the oversized one', () => {
    const big = retain(emptyBacklog('g1'), 'e1', reply(1, 2 * MiB), SPEC);
    expect(seqs(big)).toEqual([1]);
    const next = retain(big, 'e1', reply(2, 10), SPEC);
    expect(seqs(next)).toEqual([2]);
    expect(next.bytes).toBe(10);
    expect(ledgerIds(next)).toEqual(['t1']);
  });
});

describe('retain: the evicted-task ledger', () => {
  const tiny: BacklogLimits = { maxReplies: 1, maxBytes: MiB, ledgerMaxTasks: 3, maxSpans: 64 };

  it.each([
    { retained: 1, ledger: [], ledgerSeqs: [], floor: 0 },
    { retained: 2, ledger: ['t1'], ledgerSeqs: [1], floor: 0 },
    { retained: 4, ledger: ['t1', 't2', 't3'], ledgerSeqs: [1, 2, 3], floor: 0 },
    { retained: 5, ledger: ['t2', 't3', 't4'], ledgerSeqs: [2, 3, 4], floor: 1 },
    { retained: 6, ledger: ['t3', 't4', 't5'], ledgerSeqs: [3, 4, 5], floor: 2 },
    { retained: 20, ledger: ['t17', 't18', 't19'], ledgerSeqs: [17, 18, 19], floor: 16 },
  ])('after $retained replies (1 kept, ledger of 3): ledger $ledger, floor $floor', ({ retained, ledger, ledgerSeqs, floor }) => {
    const b = retainMany(emptyBacklog('g1'), retained, tiny);
    expect(seqs(b)).toEqual([retained]);
    expect(windowToArray(b.ledger)).toEqual(ledger.map((task_id, i) => ({ seq: ledgerSeqs[i], task_id })));
    expect(b.ledgerFloor).toBe(floor);
  });

  it('one retain that evicts several records them oldest first', () => {
    const b = retain(retainMany(emptyBacklog('g1'), 5, SPEC, 100 * KiB), 'e1', reply(6, MiB), SPEC);
    expect(seqs(b)).toEqual([6]);
    expect(ledgerIds(b)).toEqual(['t1', 't2', 't3', 't4', 't5']);
  });
});

describe('retain: epoch spans', () => {
  const epochs = ['e1', 'e1', 'e2', 'e2', 'e2', 'e3'];
  const build = (retention: BacklogLimits) =>
    epochs.reduce((b, epoch) => retain(b, epoch, reply(b.lastSeq + 1, 1, epoch), retention), emptyBacklog('g1'));

  it.each([
    {
      maxSpans: 64,
      spans: [
        { epoch: 'e1', firstSeq: 1 },
        { epoch: 'e2', firstSeq: 3 },
        { epoch: 'e3', firstSeq: 6 },
      ],
      spansFloor: 0,
    },
    {
      maxSpans: 2,
      spans: [
        { epoch: 'e2', firstSeq: 3 },
        { epoch: 'e3', firstSeq: 6 },
      ],
      spansFloor: 2,
    },
    { maxSpans: 1, spans: [{ epoch: 'e3', firstSeq: 6 }], spansFloor: 5 },
  ])('epochs e1 e1 e2 e2 e2 e3 with maxSpans $maxSpans', ({ maxSpans, spans, spansFloor }) => {
    const b = build({ ...SPEC, maxSpans });
    expect(windowToArray(b.spans)).toEqual(spans);
    expect(b.spansFloor).toBe(spansFloor);
  });
});

describe('retain: seq must follow lastSeq', () => {
  const two = retainMany(emptyBacklog('g1'), 2, SPEC);

  it.each([
    { seq: 2, message: 'backlog seq 2 does not follow 2' },
    { seq: 4, message: 'backlog seq 4 does not follow 2' },
    { seq: 1, message: 'backlog seq 1 does not follow 2' },
  ])('seq $seq after lastSeq 2 throws', ({ seq, message }) => {
    expect(() => retain(two, 'e1', reply(seq), SPEC)).toThrow(message);
    expect(two.lastSeq).toBe(2);
    expect(seqs(two)).toEqual([1, 2]);
  });

  it('the first seq is 1', () => {
    expect(() => retain(emptyBacklog('g1'), 'e1', reply(0), SPEC)).toThrow('backlog seq 0 does not follow 0');
    expect(retain(emptyBacklog('g1'), 'e1', reply(1), SPEC).lastSeq).toBe(1);
  });

  it('retain returns a new backlog and leaves the old one as it was', () => {
    const before = retainMany(emptyBacklog('g1'), 64, SPEC);
    const after = retain(before, 'e2', reply(65), SPEC);
    expect([before.lastSeq, seqs(before).length, seqs(before)[0], ledgerIds(before), before.bytes]).toEqual([64, 64, 1, [], 64]);
    expect(windowToArray(before.spans)).toEqual([{ epoch: 'e1', firstSeq: 1 }]);
    expect([after.lastSeq, seqs(after).length, seqs(after)[0], ledgerIds(after), after.bytes]).toEqual([65, 64, 2, ['t1'], 64]);
  });
});

describe('issuedCursor', () => {
  // Seqs 1-3 issued in epoch e1, then a restart: seqs 4-5 in e2.
  const restarted = retainMany(retainMany(emptyBacklog('g1'), 3, SPEC, 1, 'e1'), 2, SPEC, 1, 'e2');

  it.each([
    { cursor: { epoch: 'e1', generation: 'g1', seq: 1 }, issued: true },
    { cursor: { epoch: 'e1', generation: 'g1', seq: 3 }, issued: true },
    { cursor: { epoch: 'e2', generation: 'g1', seq: 4 }, issued: true },
    { cursor: { epoch: 'e2', generation: 'g1', seq: 5 }, issued: true },
    { cursor: { epoch: 'e1', generation: 'g2', seq: 3 }, issued: false }, // wrong generation
    { cursor: { epoch: 'e2', generation: 'g1', seq: 6 }, issued: false }, // beyond lastSeq
    { cursor: { epoch: 'e1', generation: 'g1', seq: 4 }, issued: false }, // seq 4 was issued in e2
    { cursor: { epoch: 'e2', generation: 'g1', seq: 3 }, issued: false }, // seq 3 was issued in e1
    { cursor: { epoch: 'e3', generation: 'g1', seq: 5 }, issued: false }, // an epoch that never issued
  ])('$cursor.epoch:$cursor.generation:$cursor.seq -> $issued', ({ cursor, issued }) => {
    expect(issuedCursor(restarted, cursor)).toBe(issued);
  });

  it('nothing was issued by an empty backlog', () => {
    expect(issuedCursor(emptyBacklog('g1'), { epoch: 'e1', generation: 'g1', seq: 1 })).toBe(false);
  });

  it.each([
    { cursor: { epoch: 'e1', generation: 'g1', seq: 3 }, issued: false }, // its span was forgotten
    { cursor: { epoch: 'e2', generation: 'g1', seq: 4 }, issued: true },
    { cursor: { epoch: 'e2', generation: 'g1', seq: 5 }, issued: true },
  ])('with one span kept: $cursor.epoch:$cursor.generation:$cursor.seq -> $issued', ({ cursor, issued }) => {
    const one = { ...SPEC, maxSpans: 1 };
    const b = retainMany(retainMany(emptyBacklog('g1'), 3, one, 1, 'e1'), 2, one, 1, 'e2');
    expect(b.spansFloor).toBe(3);
    expect(issuedCursor(b, cursor)).toBe(issued);
  });
});

describe('resume', () => {
  // Keeps 3 replies and 4 ledgered ids: after 10, replies 8-10, ledger t4-t7, ledgerFloor 3.
  const small: BacklogLimits = { maxReplies: 3, maxBytes: MiB, ledgerMaxTasks: 4, maxSpans: 64 };
  const ten = retainMany(emptyBacklog('g1'), 10, small);

  it('the fixture is what the table assumes', () => {
    expect([seqs(ten), ledgerIds(ten), ten.ledgerFloor]).toEqual([[8, 9, 10], taskIds(4, 7), 3]);
  });

  it('no cursor: no replay and no reconciliation frame', () => {
    expect(resume(ten, undefined)).toStrictEqual({ replay: [] });
  });

  it.each([
    { seq: 1, replay: [8, 9, 10], missed: taskIds(4, 7), complete: false },
    { seq: 2, replay: [8, 9, 10], missed: taskIds(4, 7), complete: false },
    { seq: 3, replay: [8, 9, 10], missed: taskIds(4, 7), complete: true },
    { seq: 5, replay: [8, 9, 10], missed: ['t6', 't7'], complete: true },
    { seq: 7, replay: [8, 9, 10], missed: [], complete: true },
    { seq: 8, replay: [9, 10], missed: [], complete: true },
    { seq: 10, replay: [], missed: [], complete: true },
  ])('cursor e1:g1:$seq replays $replay, misses $missed, recovery_complete $complete', ({ seq, replay, missed, complete }) => {
    const plan = resume(ten, { epoch: 'e1', generation: 'g1', seq });
    expect(plan).toEqual({
      replay: replay.map((n) => reply(n)),
      resync: { missed_task_ids: missed, recovery_complete: complete },
    });
  });

  it.each([
    { why: 'wrong generation', cursor: { epoch: 'e1', generation: 'g0', seq: 9 } },
    { why: 'seq beyond lastSeq', cursor: { epoch: 'e1', generation: 'g1', seq: 11 } },
    { why: 'epoch that did not issue that seq', cursor: { epoch: 'e9', generation: 'g1', seq: 9 } },
  ])('foreign cursor ($why): whole backlog, every ledgered id, recovery_complete false', ({ cursor }) => {
    expect(resume(ten, cursor)).toEqual({
      replay: [reply(8), reply(9), reply(10)],
      resync: { missed_task_ids: taskIds(4, 7), recovery_complete: false },
    });
  });

  it('after a restart an old-epoch cursor resumes exactly', () => {
    // Seqs 1-4 in e1, 5-6 in e2; the client last saw e1's seq 3.
    const b = retainMany(retainMany(emptyBacklog('g1'), 4, SPEC, 1, 'e1'), 2, SPEC, 1, 'e2');
    expect(resume(b, { epoch: 'e1', generation: 'g1', seq: 3 })).toEqual({
      replay: [reply(4, 1, 'e1'), reply(5, 1, 'e2'), reply(6, 1, 'e2')],
      resync: { missed_task_ids: [], recovery_complete: true },
    });
    expect(resume(b, { epoch: 'e2', generation: 'g1', seq: 5 })).toEqual({
      replay: [reply(6, 1, 'e2')],
      resync: { missed_task_ids: [], recovery_complete: true },
    });
  });

  it('unknown session (no backlog) with a cursor: empty replay and an empty, incomplete reconciliation', () => {
    expect(resume(undefined, { epoch: 'e1', generation: 'g1', seq: 4 })).toStrictEqual({
      replay: [],
      resync: { missed_task_ids: [], recovery_complete: false },
    });
  });

  it('unknown session without a cursor: nothing', () => {
    expect(resume(undefined, undefined)).toStrictEqual({ replay: [] });
  });
});

describe('retain: the backing arrays stay bounded over a long session', () => {
  it('10,000 replies keep 64 and do not pin the evicted ones', () => {
    const b = retainMany(emptyBacklog('g1'), 10_000, SPEC);
    expect(seqs(b)).toEqual(range(9_937, 10_000));
    expect(b.replies.items.length).toBeLessThanOrEqual(64 + 2 * 64 + 1);
    expect(b.ledger.items.length).toBeLessThanOrEqual(64 + 2 * 1024 + 1);
  });
});
