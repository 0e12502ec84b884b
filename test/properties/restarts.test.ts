/**
 * Property-based test of restarts (issue 13): fast-check generates a workload of turns (some answered at
 * once, some after a pause, so that a kill finds them pending), reconnects from the last id a client saw,
 * and SIGKILLs of the `serve` process at any step, each followed by a start on the same log. After the
 * last start: every accepted task ends with exactly one terminal reply (one cut off by a kill is settled
 * by the next start), a session's ids go 1, 2, 3… across every restart, a reconnect replays only ids
 * after its cursor in increasing order, and the log passes replay's checks.
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ServeChild, useChildFolder } from '../support/child.js';
import { post, script } from '../support/http.js';
import { readEvents } from '../support/log.js';
import { SseConnection } from '../support/sse.js';
import { verifyLogFile } from '../support/verify-log.js';
import { waitFor } from '../support/wait.js';

const RUNS = Number(process.env.PROPERTY_RUNS === undefined ? 6 : Math.ceil(Number(process.env.PROPERTY_RUNS) / 4));
const SEED = process.env.PROPERTY_SEED === undefined ? 45 : Number(process.env.PROPERTY_SEED);
const PATH = process.env.PROPERTY_PATH;
const TOKEN = 'restart-property-token';

type Step =
  | { readonly kind: 'send'; readonly session: number; readonly pauseMs: number; readonly text: string }
  | { readonly kind: 'resume'; readonly session: number }
  | { readonly kind: 'kill' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('send' as const),
      session: fc.nat(1),
      pauseMs: fc.constantFrom(0, 0, 300),
      text: fc.string({ maxLength: 30 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('resume' as const), session: fc.nat(1) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'kill' as const }) },
);
const workloads = fc.array(step, { minLength: 2, maxLength: 12, size: 'large' });

const folder = useChildFolder();
const sessionId = (n: number) => `k${n}`;

async function run(steps: readonly Step[]): Promise<void> {
  const db = join(mkdtempSync(join(folder(), 'run-')), 'relay.db');
  const args = ['--port', '0', '--db', db, '--token', TOKEN, '--agent', 'script'];
  let serve = await ServeChild.start(args);
  const accepted: string[] = [];
  /** The last id each session's client saw. */
  const cursors = new Map<string, string>();
  let tasks = 0;
  try {
    for (const each of steps) {
      if (each.kind === 'kill') {
        expect(await serve.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
        serve = await ServeChild.start(args);
        continue;
      }
      const session = sessionId(each.session);
      if (each.kind === 'send') {
        const task = `t${(tasks += 1)}`;
        const steps = [...(each.pauseMs > 0 ? [{ sleep: each.pauseMs }] : []), { message: each.text }];
        const answer = await post(serve.url, TOKEN, { session_id: session, task_id: task, text: script(...steps) });
        expect(answer.status).toBe(202);
        accepted.push(`${session}/${task}`);
        continue;
      }
      const cursor = cursors.get(session);
      const stream = await SseConnection.open(`${serve.url}/v1/events?session_id=${session}`, {
        token: TOKEN,
        ...(cursor === undefined ? {} : { lastEventId: cursor }),
      });
      expect(stream.status).toBe(200);
      if (cursor !== undefined) await stream.until((c) => c.frames.some((frame) => frame.event === 'resync'), 10_000, 'the resync frame');
      stream.close();
      const seqs = stream.frames.filter((frame) => frame.id !== undefined).map((frame) => Number(frame.id!.split(':')[2]));
      const after = cursor === undefined ? 0 : Number(cursor.split(':')[2]);
      // Only ids after the cursor, increasing.
      seqs.forEach((seq, i) =>
        expect(seq, `${session}: replayed ${seqs.join(',')} after ${after}`).toBeGreaterThan(i === 0 ? after : seqs[i - 1]!),
      );
      const last = stream.frames.filter((frame) => frame.id !== undefined).at(-1)?.id;
      if (last !== undefined) cursors.set(session, last);
    }
    // Whatever a kill cut off is settled by the start after it; the rest answer on their own.
    const settled = () =>
      readEvents(db)
        .filter((event) => event.type === 'task.settled')
        .map((event) => `${String(event.session_id)}/${String(event.task_id)}`);
    await waitFor('every accepted task to settle', () => accepted.every((task) => settled().includes(task)), { timeoutMs: 15_000 });
    for (const task of accepted)
      expect(
        settled().filter((each) => each === task),
        `${task} settles once`,
      ).toHaveLength(1);
    const events = readEvents(db);
    for (const session of [0, 1].map(sessionId)) {
      const seqs = events
        .filter((event) => event.type === 'task.settled' && event.session_id === session && event.seq !== undefined)
        .map((event) => event.seq as number);
      seqs.forEach((seq, i) => expect(seq, `${session}'s ids across restarts: ${seqs.join(',')}`).toBe(i + 1));
    }
  } finally {
    await serve.stop('SIGKILL');
  }
  await verifyLogFile(db);
}

describe('restarts at random steps', () => {
  it(
    'every accepted task settles once, ids go on increasing, a resume replays only what follows its cursor, the log verifies',
    async () => {
      await fc.assert(fc.asyncProperty(workloads, run), { numRuns: RUNS, seed: SEED, ...(PATH === undefined ? {} : { path: PATH }) });
    },
    60_000 + RUNS * 10_000,
  );
});
