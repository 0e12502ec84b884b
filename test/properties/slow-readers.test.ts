/**
 * Property-based tests of slow and fast readers (issue 13, 4.2 rule 4): fast-check generates a session's
 * workload (replies of any size up to and past 256 KiB, with progress; the reader stopping reading,
 * reading again, or leaving and coming back) against a real host whose readers may queue only 256 KiB
 * and whose backlog keeps 4 replies, so that a reader that stops long enough is dropped and replies are
 * evicted while it is away. The reader behaves as a client does: whenever its stream ends, it connects
 * again from the newest id it read; at the end it reads everything and connects once more.
 *
 * - every terminal reply the session framed reaches the reader once, or is named in a resync frame it got
 *   (never both), and the ids it reads strictly increase across all its connections;
 * - what waits for a reader (its queue and what its socket holds) never passes the bound by more than
 *   one write (found by this property: a reply written to a reader keeping up can take its socket past it);
 * - no frame passes 256 KiB.
 *
 * Runs: 5, or a 25th of PROPERTY_RUNS (each run moves megabytes a spell), at PROPERTY_SEED (default 46), or PROPERTY_PATH.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DomainEvent, TaskSessionView } from '../../index.js';
import { LIMITS as PROTOCOL_LIMITS } from '../../protocol/index.js';
import { startHost, TOKEN, type TestHost } from '../support/host.js';
import { post, script } from '../support/http.js';
import { SseConnection } from '../support/sse.js';
import { eventually, waitFor } from '../support/wait.js';

const RUNS = process.env.PROPERTY_RUNS === undefined ? 5 : Math.ceil(Number(process.env.PROPERTY_RUNS) / 25);
const SEED = process.env.PROPERTY_SEED === undefined ? 46 : Number(process.env.PROPERTY_SEED);
const PATH = process.env.PROPERTY_PATH;
const SESSION = 's-slow';
const MAX_QUEUED = 256 * 1024;
/**
 * The bound is checked as a frame is queued for a blocked reader; a write to a reader that is keeping up
 * is never refused, so the socket may hold one write past it (PROTOCOL.md 3.2): here at most one reply
 * and its progress, framed.
 */
const ONE_WRITE = PROTOCOL_LIMITS.replyMaxBytes + 4 * 1024;
const LIMITS = { maxReplies: 4 };

interface Reply {
  readonly bytes: number;
  readonly progress: number;
}

/** `slow`: the reader comes back, stops reading while these replies come, then reads again. */
type Step =
  ({ readonly kind: 'reply' } & Reply) | { readonly kind: 'slow'; readonly replies: readonly Reply[] } | { readonly kind: 'leave' };

const reply: fc.Arbitrary<Reply> = fc.record({
  bytes: fc.oneof(fc.integer({ min: 1, max: 2_000 }), fc.integer({ min: 100 * 1024, max: 270 * 1024 })),
  progress: fc.nat(2),
});
/** Big replies, enough of them in a slow spell to fill what the sockets hold (about 4 MB on loopback here) and then the reader's queue. */
const bigReply: fc.Arbitrary<Reply> = fc.record({ bytes: fc.integer({ min: 200 * 1024, max: 270 * 1024 }), progress: fc.nat(2) });
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: reply.map((each) => ({ kind: 'reply' as const, ...each })) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('slow' as const),
      replies: fc.array(fc.oneof({ weight: 4, arbitrary: bigReply }, { weight: 1, arbitrary: reply }), { minLength: 24, maxLength: 40 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant<Step>({ kind: 'leave' }) },
);
const workloads = fc.array(step, { minLength: 1, maxLength: 8, size: 'max' });

/** What the reader read across its connections. */
interface Read {
  readonly ids: string[];
  readonly tasks: string[];
  readonly missed: Set<string>;
  readonly frames: number[];
}

/** Readers the host dropped, over every run: the workloads must make some reader slow enough. */
let dropped = 0;

class Reader {
  stream!: SseConnection;
  paused = false;
  private taken = 0;
  private connections = 0;
  readonly read: Read = { ids: [], tasks: [], missed: new Set(), frames: [] };

  constructor(private readonly t: TestHost) {}

  async connect(): Promise<void> {
    // As the client library does (PROTOCOL.md 8.3): a stream that ends before any reply resumes from an id
    // no session issued, so it gets the whole backlog, not only what comes next.
    const lastEventId = this.read.ids.at(-1) ?? (this.connections++ > 0 ? '0:0:1' : undefined);
    this.stream = await SseConnection.open(`${this.t.url}/v1/events?session_id=${SESSION}`, {
      token: TOKEN,
      ...(lastEventId === undefined ? {} : { lastEventId }),
    });
    expect(this.stream.status).toBe(200);
    this.taken = 0;
    this.paused = false;
  }

  /** Takes in what the stream has brought since the last look. */
  take(): void {
    const frames = this.stream.frames;
    for (; this.taken < frames.length; this.taken += 1) {
      const frame = frames[this.taken]!;
      this.read.frames.push(Buffer.byteLength(frame.data));
      if (frame.event === 'resync')
        for (const task of (JSON.parse(frame.data) as { missed_task_ids: string[] }).missed_task_ids) this.read.missed.add(task);
      else if (frame.id !== undefined) {
        this.read.ids.push(frame.id);
        this.read.tasks.push((JSON.parse(frame.data) as { task_id: string }).task_id);
      }
    }
  }

  /** As a client: a stream that ended under a reader that reads is connected again from its newest id. */
  async keepUp(): Promise<void> {
    if (this.paused || !this.stream.ended) return;
    this.take();
    if (!this.stream.complete) dropped += 1;
    await this.connect();
  }

  async leave(): Promise<void> {
    this.take();
    this.stream.close();
    await this.connect();
  }

  pause(): void {
    this.paused = true;
    this.stream.pause();
  }

  resume(): void {
    this.paused = false;
    this.stream.resume();
  }
}

const seqOf = (id: string) => Number(id.split(':')[2]);

async function run(steps: readonly Step[]): Promise<void> {
  const t = await startHost({ agent: 'script', limits: LIMITS, readerMaxQueuedBytes: MAX_QUEUED });
  const events: DomainEvent[] = [];
  t.host.onEvent((event) => events.push(event));
  const reader = new Reader(t);
  try {
    await reader.connect();
    let tasks = 0;
    const send = async (each: Reply) => {
      const task = `t${(tasks += 1)}`;
      const text = script(...Array.from({ length: each.progress }, () => ({ typing: 'thinking' })), { message_bytes: each.bytes });
      expect((await post(t.url, TOKEN, { session_id: SESSION, task_id: task, text })).status).toBe(202);
      await waitFor(`${task} to settle`, () => events.some((event) => event.type === 'task.settled' && event.task_id === task), {
        everyMs: 5,
      });
      // What waits for the reader stays within the bound.
      for (const state of (t.host.session(SESSION) as TaskSessionView).reader_states) {
        expect(state.queued_bytes + state.socket_buffered, 'queued for a reader').toBeLessThanOrEqual(MAX_QUEUED + ONE_WRITE);
      }
    };
    for (const each of steps) {
      if (each.kind === 'reply') await send(each);
      else if (each.kind === 'leave') await reader.leave();
      else {
        // On a fresh connection: one that has read megabytes has a receive window of megabytes (the kernel
        // grows it as the reader keeps up), and no spell here would fill it.
        await reader.leave();
        reader.pause();
        for (const one of each.replies) await send(one);
        reader.resume();
      }
      await reader.keepUp();
    }
    // The end: the reader reads all it was sent (connecting again if it was dropped), up to the newest reply.
    reader.resume();
    const framed = events.filter((event) => event.type === 'task.settled' && event.seq !== undefined).length;
    await eventually(
      'the reader to read the newest reply',
      async () => {
        reader.take();
        await reader.keepUp();
        return reader.read.ids.at(-1);
      },
      (id) => framed === 0 || (id !== undefined && seqOf(id) === framed),
      { everyMs: 10 },
    );
    const { ids, tasks: read, missed, frames } = reader.read;
    const seqs = ids.map(seqOf);
    seqs.forEach((seq, i) => i > 0 && expect(seq, `id ${ids[i]} after ${ids[i - 1]}`).toBeGreaterThan(seqs[i - 1]!));
    for (const event of events) {
      if (event.type !== 'task.settled' || event.seq === undefined) continue;
      const got = read.filter((task) => task === event.task_id).length;
      expect([got, missed.has(event.task_id)], `${event.task_id}: read, named missed`).toSatisfy(
        ([n, named]: [number, boolean]) => (n === 1 && !named) || (n === 0 && named),
      );
    }
    for (const bytes of frames) expect(bytes).toBeLessThanOrEqual(PROTOCOL_LIMITS.replyMaxBytes);
  } finally {
    reader.stream?.close();
    await t.cleanup();
  }
}

describe('slow and fast readers under random workloads', () => {
  it(
    'every reply reaches the reader once or is named missed, in id order, and a reader never has more than its bound and one write waiting',
    async () => {
      await fc.assert(fc.asyncProperty(workloads, run), { numRuns: RUNS, seed: SEED, ...(PATH === undefined ? {} : { path: PATH }) });
      console.log(`slow readers: ${dropped} dropped by the host over ${RUNS} runs`);
      // The workloads make readers slow enough to be dropped: otherwise this property tests only fast ones.
      expect(dropped).toBeGreaterThan(0);
    },
    60_000 + RUNS * 60_000,
  );
});
