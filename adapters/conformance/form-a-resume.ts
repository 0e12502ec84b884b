/**
 * Form A host checks of resuming (spec 4.2 `GET /v1/events` rule 7, 2.7, 3.1, 8): a reconnect after a
 * cursor replays every retained terminal reply after it, in order, then one reconciliation frame that
 * names only replies evicted after the cursor; a first connection gets neither.
 */
import { isDeepStrictEqual } from 'node:util';
import { rule, shown, type Check, type CheckScope } from './check.js';
import { isResync, openSession, scriptText, openedStream, settledTasks, type FormAHostContext, type Reply } from './form-a-wire.js';
import { dataObject, type WireFrame, type WireStream } from './wire-stream.js';

/** Spec 8: a session retains at least its last 64 terminal replies (or 1 MiB of them). */
const RETAINED_AT_LEAST = 64;
/** Enough tasks past the cursor that a host retaining the spec's minimum evicts some. */
const PAST_RETENTION = RETAINED_AT_LEAST + 6;

/** What a reconnect after `cursor` gave: the replies replayed before the reconciliation frame, and that frame. */
async function resumed(context: FormAHostContext, scope: CheckScope, session: string, cursor: string, expected: number) {
  const stream = await openedStream(context, scope, session, cursor);
  const replayed: Reply[] = [];
  for (;;) {
    const frame: WireFrame = await stream.nextFrame(context.replyMs, `the reconciliation frame after ${replayed.length} replayed replies`);
    const body = dataObject(frame);
    if (isResync(body)) return { stream, replayed, resync: { frame, body } };
    replayed.push({ frame, body });
    rule(replayed.length <= expected + 1, `more than the ${expected} replies after the cursor were replayed`);
  }
}

function missedOf(body: Record<string, unknown>): string[] {
  const missed = body.missed_task_ids;
  rule(
    Array.isArray(missed) && missed.every((id) => typeof id === 'string'),
    `missed_task_ids is ${shown(missed)}, not a list of task ids`,
  );
  rule(typeof body.recovery_complete === 'boolean', `recovery_complete is ${shown(body.recovery_complete)}, not a boolean`);
  return missed as string[];
}

/** No frame at all arrives on `stream` for a while (comments may). */
async function quiet(stream: WireStream, ms: number): Promise<void> {
  const frames = (await stream.drain(ms)).filter((item) => item.kind === 'frame');
  rule(frames.length === 0, `a first connection got ${frames.length} frames with nothing new sent: ${shown(frames[0])}`);
}

export const FORM_A_RESUME_CHECKS: readonly Check<FormAHostContext>[] = [
  {
    id: 'form-a.first-connection',
    spec: '4.2 GET /v1/events rule 7',
    title: 'a first connection (no Last-Event-ID) gets no replay and no reconciliation frame',
    async run(context, scope) {
      const { session, stream } = await openSession(context, scope, 'first');
      await settledTasks(context, scope, stream, session, 2);
      await quiet(await openedStream(context, scope, session), 1_000);
    },
  },
  {
    id: 'form-a.resume',
    spec: '4.2 GET /v1/events rule 7',
    title: 'a reconnect after a cursor replays every terminal reply after it, in order, then a reconciliation frame naming none',
    async run(context, scope) {
      const { session, stream } = await openSession(context, scope, 'resume');
      const replies = await settledTasks(context, scope, stream, session, 5);
      const after = replies.slice(2);
      const { replayed, resync } = await resumed(context, scope, session, replies[1]!.frame.id ?? '', after.length);
      rule(
        replayed.length === after.length,
        `${replayed.length} replies were replayed after the cursor, not the ${after.length} the session has after it`,
      );
      after.forEach((reply, i) => {
        rule(
          replayed[i]!.frame.id === reply.frame.id,
          `replay ${i + 1} has id ${shown(replayed[i]!.frame.id)}, not ${shown(reply.frame.id)}`,
        );
        rule(
          isDeepStrictEqual(replayed[i]!.body, reply.body),
          `replay ${i + 1} is not the reply as first sent: ${shown(replayed[i]!.body)}`,
        );
      });
      rule(missedOf(resync.body).length === 0, `nothing was evicted, yet missed_task_ids is ${shown(resync.body.missed_task_ids)}`);
      rule(resync.body.recovery_complete === true, 'recovery_complete is false for a cursor the host issued and still covers');
    },
  },
  {
    id: 'form-a.resync',
    spec: '2.7',
    title: `past retention: only evicted tasks are named, none replayed; with recovery_complete, replayed and named are every task after the cursor`,
    // Seventy turns: short scripted replies, not seventy calls of a model.
    needs: ['script-agent'],
    async run(context, scope) {
      const { session, stream } = await openSession(context, scope, 'resync');
      const replies = await settledTasks(context, scope, stream, session, PAST_RETENTION + 1, () => scriptText({ message: 'ok' }));
      const after = replies.slice(1).map((reply) => reply.body.task_id as string);
      const { replayed, resync } = await resumed(context, scope, session, replies[0]!.frame.id ?? '', after.length);
      const replayedTasks = replayed.map((reply) => reply.body.task_id as string);
      const missed = missedOf(resync.body);
      for (const task of missed) {
        rule(after.includes(task), `missed_task_ids names ${task}, which is not a task after the cursor`);
        rule(!replayedTasks.includes(task), `missed_task_ids names ${task}, whose reply was just replayed`);
      }
      rule(
        replayed.length >= Math.min(RETAINED_AT_LEAST, after.length),
        `only ${replayed.length} replies were replayed: a session retains at least its last ${RETAINED_AT_LEAST} (spec 8)`,
      );
      // What was replayed is the newest, in order: the oldest are what eviction takes.
      rule(
        replayedTasks.join() === after.slice(after.length - replayed.length).join(),
        'the replay is not the newest replies after the cursor, in order',
      );
      if (resync.body.recovery_complete === true)
        rule(
          missed.length + replayed.length === after.length,
          `recovery_complete is true, yet ${after.length - missed.length - replayed.length} tasks after the cursor were neither replayed nor named`,
        );
    },
  },
];
