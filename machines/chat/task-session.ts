/**
 * A task session, Form A's session (3.1 rules 1-3, 4.2): its tasks, keyed by session_id, open until the host,
 * the agent or idleness ends it; ended sessions are remembered so later messages are ignored (4.2 rule 1).
 * (Form B's session is a conversation: conversation.ts.) The statechart is the `evolve` half of the task
 * session decider: it folds logged events, never decides.
 *
 * | State | Event            | Next  | Effect on context                                                 |
 * |-------|------------------|-------|-------------------------------------------------------------------|
 * | open  | task.started     | open  | a pending task; the user turn joins memory                        |
 * | open  | task.progressed  | open  | the task stays pending (live-only progress, or queued for its callback) |
 * | open  | task.settled     | open  | the task settles; its reply enters the backlog (evicting the oldest), or the outbox for a task with a callback |
 * | open  | reply.dropped    | open  | nothing: a reply for a settled or unknown task                    |
 * | open  | session.ended    | ended | memory, prelude, task ids and retained replies go (pending tasks were settled first by the decider) |
 * | ended | reply.dropped    | ended | nothing                                                           |
 */
import { replyBytes, type CallbackBlock } from '../../protocol/index.js';
import { assign, setup, type SnapshotFrom } from 'xstate';
import { compactBacklog, emptyBacklog, retain, type Backlog } from './backlog.js';
import type { EndReason, SessionEnded, TaskSessionEvent, SessionOpened, TaskProgressed, TaskSettled, TaskStarted } from './events.js';
import { stepper } from '../core/step.js';
import { remember, type MemoryEntry } from './memory.js';
import type { SessionLimits } from './session-limits.js';
import { rememberTaskId } from './task-ids.js';
import { emptyWindow, type Window } from '../core/window.js';
import { initialTask, type taskMachine } from './task.js';

export type { MemoryEntry, SessionLimits };

export type TaskSnapshot = SnapshotFrom<typeof taskMachine>;

export interface TaskSessionContext {
  readonly session_id: string;
  readonly openedAt: number;
  /** Last logged activity; the idle deadline is this plus the host's idle TTL. */
  readonly lastActivityAt: number;
  readonly backlog: Backlog;
  /**
   * Tasks not yet settled, by task_id, in the order they started. Settled tasks leave; their replies
   * live in the backlog. A Map, not a record: task ids are arbitrary keys, not fields of a shape.
   */
  readonly pending: ReadonlyMap<string, TaskSnapshot>;
  /** The latest callback a task named: a message naming it again logs `same_callback`, not the callback. */
  readonly callback: CallbackBlock | undefined;
  /** The newest task ids started here: the duplicate check for retried POSTs. */
  readonly taskIds: Window<string>;
  /** The latest `system_prelude` sent on this session: standing context for every later turn. */
  readonly prelude: string | undefined;
  readonly memory: Window<MemoryEntry>;
  /** Characters of text in `memory`. */
  readonly memoryChars: number;
  readonly endedAt: number | undefined;
  readonly endReason: EndReason | undefined;
  /** Callback deliveries queued so far (tasks with a callback block): the next one is numbered one more. */
  readonly deliveries: number;
  readonly limits: SessionLimits;
}

/**
 * A new map for every change, as a fold must not change what an earlier snapshot holds. Most sessions have
 * one task pending at a time: copying an empty map, or one left empty, is skipped (a copy walks the map).
 */
function withTask(pending: ReadonlyMap<string, TaskSnapshot>, taskId: string, task: TaskSnapshot): ReadonlyMap<string, TaskSnapshot> {
  return (pending.size === 0 ? new Map<string, TaskSnapshot>() : new Map(pending)).set(taskId, task);
}

function withoutTask(pending: ReadonlyMap<string, TaskSnapshot>, taskId: string): ReadonlyMap<string, TaskSnapshot> {
  if (pending.size === 1 && pending.has(taskId)) return new Map();
  const left = new Map(pending);
  left.delete(taskId);
  return left;
}

function started(context: TaskSessionContext, event: TaskStarted): Partial<TaskSessionContext> {
  const callback = event.callback ?? (event.same_callback ? context.callback : undefined);
  const { memory, memoryChars } = remember(
    context,
    { role: 'user', task_id: event.task_id, text: event.text, at: event.at },
    context.limits,
  );
  return {
    pending: withTask(
      context.pending,
      event.task_id,
      initialTask(callback === undefined ? { task_id: event.task_id, at: event.at } : { task_id: event.task_id, at: event.at, callback }),
    ),
    callback: event.callback ?? context.callback,
    taskIds: rememberTaskId(context.taskIds, event.task_id, context.limits),
    prelude: event.system_prelude ?? context.prelude,
    memory,
    memoryChars,
    lastActivityAt: event.at,
  };
}

/** Progress is the task table's self-loop (pending stays pending): only activity moves, and a callback task's progress is queued. */
function progressed(event: TaskProgressed): Partial<TaskSessionContext> {
  return event.delivery === undefined ? { lastActivityAt: event.at } : { lastActivityAt: event.at, deliveries: event.delivery.n };
}

function settled(context: TaskSessionContext, event: TaskSettled): Partial<TaskSessionContext> {
  const pending = withoutTask(context.pending, event.task_id);
  // Built field by field: a fold settles a task every few events, and spreading partial objects costs more.
  const update: { -readonly [K in keyof TaskSessionContext]?: TaskSessionContext[K] } = { pending, lastActivityAt: event.at };
  if (event.delivery === undefined) {
    const retained = {
      seq: event.seq,
      id: `${event.epoch}:${context.backlog.generation}:${event.seq}`,
      task_id: event.task_id,
      data: event.data,
      bytes: replyBytes(event.data),
    };
    update.backlog = retain(context.backlog, event.epoch, retained, context.limits);
  } else update.deliveries = event.delivery.n;
  if (event.reply.status === 'message') {
    const { memory, memoryChars } = remember(
      context,
      { role: 'assistant', task_id: event.task_id, text: event.reply.reply_text, at: event.at },
      context.limits,
    );
    update.memory = memory;
    update.memoryChars = memoryChars;
  }
  return update;
}

/**
 * An ended session answers "ended", and a reconnect replays its last replies from the log: in memory it
 * keeps only the ids it issued. What fed the agent, the duplicate check and the retained replies go.
 */
function ended(context: TaskSessionContext, event: SessionEnded): Partial<TaskSessionContext> {
  return {
    backlog: compactBacklog(context.backlog),
    callback: undefined,
    endedAt: event.at,
    endReason: event.reason,
    lastActivityAt: event.at,
    taskIds: emptyWindow(),
    prelude: undefined,
    memory: emptyWindow(),
    memoryChars: 0,
  };
}

function initialContext(opened: SessionOpened, limits: SessionLimits): TaskSessionContext {
  return {
    session_id: opened.session_id,
    openedAt: opened.at,
    lastActivityAt: opened.at,
    backlog: emptyBacklog(opened.generation),
    pending: new Map(),
    callback: undefined,
    taskIds: emptyWindow(),
    prelude: undefined,
    memory: emptyWindow(),
    memoryChars: 0,
    endedAt: undefined,
    endReason: undefined,
    deliveries: 0,
    limits,
  };
}

const SCRATCH = initialContext(
  { type: 'session.opened', session_id: '', generation: '0', form: 'A', at: 0 },
  { maxReplies: 0, maxBytes: 0, ledgerMaxTasks: 0, maxSpans: 0, memoryMaxEntries: 0, memoryMaxChars: 0, taskIdWindow: 0 },
);

export const taskSessionMachine = setup({
  types: {
    context: {} as TaskSessionContext,
    input: {} as { opened: SessionOpened; limits: SessionLimits },
    events: {} as Exclude<TaskSessionEvent, SessionOpened>,
  },
  actions: {
    startTask: assign(({ context }, event: TaskStarted) => started(context, event)),
    progressTask: assign((_, event: TaskProgressed) => progressed(event)),
    settleTask: assign(({ context }, event: TaskSettled) => settled(context, event)),
    end: assign(({ context }, event: SessionEnded) => ended(context, event)),
  },
}).createMachine({
  id: 'session',
  // `transition()` evaluates this with no input when it builds its scratch actor: keep it total and cheap.
  context: ({ input }) => (input === undefined ? SCRATCH : initialContext(input.opened, input.limits)),
  initial: 'open',
  states: {
    open: {
      on: {
        'task.started': { actions: { type: 'startTask', params: ({ event }) => event } },
        'task.progressed': { actions: { type: 'progressTask', params: ({ event }) => event } },
        'task.settled': { actions: { type: 'settleTask', params: ({ event }) => event } },
        'reply.dropped': {},
        'session.ended': { target: 'ended', actions: { type: 'end', params: ({ event }) => event } },
      },
    },
    ended: {
      on: {
        'reply.dropped': {},
      },
    },
  },
});

export type TaskSessionSnapshot = SnapshotFrom<typeof taskSessionMachine>;

const session = stepper(taskSessionMachine);

export function initialTaskSession(opened: SessionOpened, limits: SessionLimits): TaskSessionSnapshot {
  return session.initial({ opened, limits })[0];
}

/** Folds one logged event into the session. */
export function evolveTaskSession(snapshot: TaskSessionSnapshot, event: Exclude<TaskSessionEvent, SessionOpened>): TaskSessionSnapshot {
  return session.next(snapshot, event)[0];
}

/** The session's pending tasks in the order they started. */
export function pendingInOrder(session: TaskSessionSnapshot): TaskSnapshot[] {
  return [...session.context.pending.values()];
}

export function isTaskSessionEnded(session: TaskSessionSnapshot): boolean {
  return session.value === 'ended';
}
