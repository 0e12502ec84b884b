/**
 * Property-based tests of Form A (issue 13): fast-check generates workloads (sessions, messages whose
 * replies are scripted for the `script` agent: progress, then a terminal reply of any kind and size, some
 * past 256 KiB; retried task ids; reconnects from no cursor, the newest id, a stale one, one of another
 * epoch, one never issued) and runs each against a real host on loopback with a small backlog, so that
 * replies are evicted into the ledger. Each property is its own test, with its own runs, and a failing
 * workload shrinks to a short one. PROPERTY_RUNS (default 25) workloads a property at PROPERTY_SEED
 * (default 42); `npm run test:deep` runs 50 times as many. Restarts mid-workload (SIGKILL at a random step) are not here yet.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LIMITS as PROTOCOL_LIMITS } from '../../protocol/index.js';
import type { DomainEvent } from '../../index.js';
import { startHost, TOKEN, type TestHost } from '../support/host.js';
import { post, script } from '../support/http.js';
import { SseConnection, type SseFrame } from '../support/sse.js';
import { waitFor } from '../support/wait.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 25);
const SEED = process.env.PROPERTY_SEED === undefined ? 42 : Number(process.env.PROPERTY_SEED);
const LIMITS = { maxReplies: 2, ledgerMaxTasks: 3 };

type Cursor = 'none' | 'newest' | 'stale' | 'other-epoch' | 'never-issued';

type Step =
  | { readonly kind: 'send'; readonly session: number; readonly task: number; readonly steps: readonly unknown[] }
  | { readonly kind: 'resume'; readonly session: number; readonly cursor: Cursor };

const progress = fc.oneof(
  fc.string({ maxLength: 20 }).map((label) => ({ typing: label })),
  fc.string({ maxLength: 20 }).map((name) => ({ tool_call: name })),
);
const terminal = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 200 }).map((message) => ({ message })) },
  { weight: 1, arbitrary: fc.integer({ min: 200 * 1024, max: 300 * 1024 }).map((bytes) => ({ message_bytes: bytes })) },
  { weight: 1, arbitrary: fc.constant({ completed: true }) },
  { weight: 1, arbitrary: fc.constant({ silent: true }) },
  { weight: 1, arbitrary: fc.constant({ errored: { code: 'agent_error', message: 'no' } }) },
);
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('send' as const),
      session: fc.nat(1),
      task: fc.nat(11),
      steps: fc.tuple(fc.array(progress, { maxLength: 2 }), terminal).map(([p, t]) => [...p, t]),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('resume' as const),
      session: fc.nat(1),
      cursor: fc.constantFrom<Cursor>('none', 'newest', 'stale', 'other-epoch', 'never-issued'),
    }),
  },
);
const workloads = fc.array(step, { minLength: 1, maxLength: 24, size: 'large' });

/** A reply the log says was framed: its session's seq, id and task. */
interface Framed {
  readonly seq: number;
  readonly id: string;
  readonly task_id: string;
}

interface Resumed {
  readonly session: string;
  readonly cursor: Cursor;
  /** The cursor's seq, for a cursor this session issued. */
  readonly after: number | undefined;
  /** The session's framed replies when it resumed. */
  readonly framed: readonly Framed[];
  readonly frames: readonly SseFrame[];
  readonly resync: { readonly missed_task_ids: readonly string[]; readonly recovery_complete: boolean } | undefined;
}

interface Run {
  readonly t: TestHost;
  readonly events: readonly DomainEvent[];
  readonly accepted: ReadonlyArray<{ readonly session: string; readonly task: string }>;
  readonly resumes: readonly Resumed[];
}

const sessionId = (n: number) => `s${n}`;

function framedOf(events: readonly DomainEvent[], session: string): Framed[] {
  const generation = generationOf(events, session);
  return events.flatMap((event) =>
    event.type === 'task.settled' && event.session_id === session && event.seq !== undefined
      ? [{ seq: event.seq, id: `${event.epoch}:${generation}:${event.seq}`, task_id: event.task_id }]
      : [],
  );
}

function generationOf(events: readonly DomainEvent[], session: string): string {
  const opened = events.find((event) => event.type === 'session.opened' && event.session_id === session);
  return opened?.type === 'session.opened' ? opened.generation : 'none';
}

/** Runs `steps` against a fresh host, then `check`s what happened; the host is removed either way. */
async function run(steps: readonly Step[], check: (run: Run) => Promise<void> | void): Promise<void> {
  const t = await startHost({ agent: 'script', limits: LIMITS });
  const events: DomainEvent[] = [];
  t.host.onEvent((event) => events.push(event));
  const accepted: Array<{ session: string; task: string }> = [];
  const resumes: Resumed[] = [];
  try {
    for (const each of steps) {
      const session = sessionId(each.session);
      if (each.kind === 'send') {
        const task = `t${each.task}`;
        const answer = await post(t.url, TOKEN, { session_id: session, task_id: task, text: script(...each.steps) });
        expect([202, 200]).toContain(answer.status);
        if (answer.status !== 202) continue;
        accepted.push({ session, task });
        const settled = () =>
          events.some((event) => event.type === 'task.settled' && event.session_id === session && event.task_id === task);
        await waitFor(`${session}/${task} to settle`, settled, { everyMs: 5 });
        continue;
      }
      const framed = framedOf(events, session);
      const generation = generationOf(events, session);
      const lastEventId: Record<Cursor, string | undefined> = {
        none: undefined,
        newest: framed.at(-1)?.id,
        stale: framed[0]?.id,
        'other-epoch': `otherepoch01:${generation}:1`,
        'never-issued': `${t.host.epoch}:${generation}:${(framed.at(-1)?.seq ?? 0) + 5}`,
      };
      const cursor = lastEventId[each.cursor];
      const stream = await SseConnection.open(`${t.url}/v1/events?session_id=${session}`, {
        token: TOKEN,
        ...(cursor === undefined ? {} : { lastEventId: cursor }),
      });
      expect(stream.status).toBe(200);
      if (cursor !== undefined) await stream.until((c) => c.frames.some((frame) => frame.event === 'resync'), 10_000, 'the resync frame');
      stream.close();
      const resync = stream.frames.find((frame) => frame.event === 'resync');
      const issued = cursor !== undefined && (each.cursor === 'newest' || each.cursor === 'stale');
      resumes.push({
        session,
        cursor: cursor === undefined ? 'none' : each.cursor,
        after: issued ? framed.find((reply) => reply.id === cursor)!.seq : undefined,
        framed,
        frames: stream.frames,
        resync: resync === undefined ? undefined : JSON.parse(resync.data),
      });
    }
    await check({ t, events, accepted, resumes });
  } finally {
    await t.cleanup();
  }
}

const PATH = process.env.PROPERTY_PATH;
const property = (check: (run: Run) => Promise<void> | void) =>
  fc.assert(
    fc.asyncProperty(workloads, (steps) => run(steps, check)),
    { numRuns: RUNS, seed: SEED, ...(PATH === undefined ? {} : { path: PATH }) },
  );
/** A run of a few hundred milliseconds a workload, and room for a deep run's. */
const TIMEOUT = 30_000 + RUNS * 1_000;

describe('Form A under random workloads', () => {
  it(
    'every accepted task ends with exactly one terminal reply',
    async () => {
      await property(({ events, accepted }) => {
        for (const { session, task } of accepted) {
          const settled = events.filter((event) => event.type === 'task.settled' && event.session_id === session && event.task_id === task);
          expect(settled, `${session}/${task}`).toHaveLength(1);
        }
        // And nothing settles that was not started.
        const started = new Set(accepted.map(({ session, task }) => `${session}/${task}`));
        for (const event of events) if (event.type === 'task.settled') expect(started).toContain(`${event.session_id}/${event.task_id}`);
      });
    },
    TIMEOUT,
  );

  it(
    'a resume replays every retained reply after its cursor in order and once, names each evicted one or says recovery is incomplete, and names nothing else',
    async () => {
      await property(({ resumes }) => {
        for (const resumed of resumes) {
          if (resumed.cursor === 'none') {
            expect(resumed.resync).toBeUndefined();
            continue;
          }
          const replayed = resumed.frames.filter((frame) => frame.id !== undefined);
          const ids = replayed.map((frame) => frame.id);
          expect(new Set(ids).size, 'each reply once').toBe(ids.length);
          const bySeq = new Map(resumed.framed.map((reply) => [reply.id, reply]));
          const seqs = replayed.map((frame) => bySeq.get(frame.id!)?.seq);
          expect(
            seqs.every((seq) => seq !== undefined),
            'only replies the log framed',
          ).toBe(true);
          expect(seqs, 'in order').toEqual([...(seqs as number[])].sort((a, b) => a - b));
          expect(resumed.resync).toBeDefined();
          const { missed_task_ids, recovery_complete } = resumed.resync!;
          const after = resumed.after;
          if (after === undefined) {
            // A cursor this session never issued: whatever is retained, and recovery cannot be complete.
            expect(recovery_complete).toBe(false);
          } else {
            expect(
              seqs.every((seq) => seq! > after),
              'only replies after the cursor',
            ).toBe(true);
          }
          const since = resumed.framed.filter((reply) => after === undefined || reply.seq > after);
          const replayedTasks = new Set(replayed.map((frame) => bySeq.get(frame.id!)!.task_id));
          // Every reply since the cursor is replayed, or named as missed, or recovery is not complete.
          if (recovery_complete)
            for (const reply of since)
              expect(replayedTasks.has(reply.task_id) || missed_task_ids.includes(reply.task_id), `reply ${reply.id}`).toBe(true);
          // Nothing is named missed that was not framed since the cursor and left out of the replay.
          for (const task of missed_task_ids) {
            expect(
              since.some((reply) => reply.task_id === task),
              `${task} named missed`,
            ).toBe(true);
            expect(replayedTasks.has(task), `${task} both replayed and missed`).toBe(false);
          }
        }
      });
    },
    TIMEOUT,
  );

  it(
    'ids of a session strictly increase, progress frames carry none, and no frame passes 256 KiB',
    async () => {
      await property(({ events, resumes }) => {
        for (const session of [0, 1].map(sessionId)) {
          const seqs = framedOf(events, session).map((reply) => reply.seq);
          seqs.forEach((seq, i) => expect(seq, `${session} seq ${i}`).toBe(i + 1));
        }
        for (const { frames } of resumes) {
          for (const frame of frames) {
            expect(Buffer.byteLength(frame.data)).toBeLessThanOrEqual(PROTOCOL_LIMITS.replyMaxBytes);
            if (frame.event === 'resync') continue;
            const status = (JSON.parse(frame.data) as { status?: string }).status;
            if (status === 'typing' || status === 'tool_call') expect(frame.id).toBeUndefined();
            else expect(frame.id).toBeDefined();
          }
        }
      });
    },
    TIMEOUT,
  );

  it(
    'the log folds to the state the live host had',
    async () => {
      await property(async ({ t }) => {
        // A stream the client closed is let go by the host a moment later; readers are not in the log.
        await waitFor(
          'the closed streams to be let go',
          () => t.host.sessionIds().every((id) => (t.host.session(id) as { readers?: number } | undefined)?.readers === 0),
          { everyMs: 5 },
        );
        const live = t.host.sessionIds().map((id) => t.host.session(id));
        await t.close();
        const again = await startHost({ agent: 'script', limits: LIMITS, dir: t.dir });
        try {
          expect(again.host.sessionIds().map((id) => again.host.session(id))).toEqual(live);
        } finally {
          await again.close();
        }
      });
    },
    TIMEOUT,
  );
});
