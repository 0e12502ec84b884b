/**
 * The session lifecycle (3.1 rules 1-3, 4.2): one conversation keyed by session_id, open until the host,
 * the agent or idleness ends it; ended sessions are remembered so later messages are ignored (4.2 rule 1).
 * The statechart is the `evolve` half of the session decider: it folds logged events, never decides.
 *
 * | State | Event            | Next  | Effect on context                                                 |
 * |-------|------------------|-------|-------------------------------------------------------------------|
 * | open  | task.started     | open  | a pending task; the user turn joins memory                        |
 * | open  | task.progressed  | open  | the task stays pending (live-only progress)                       |
 * | open  | task.settled     | open  | the task settles; its reply enters the backlog (evicting the oldest) |
 * | open  | reply.dropped    | open  | nothing: a reply for a settled or unknown task                    |
 * | open  | session.ended    | ended | (pending tasks were settled first by the decider)                 |
 * | ended | reply.dropped    | ended | nothing                                                           |
 */
import { replyBytes } from '../protocol/index.js';
import { assign, setup, type SnapshotFrom } from 'xstate';
import { emptyBacklog, retain, type Backlog, type Retention } from './backlog.js';
import type { EndReason, SessionEvent, SessionOpened, TaskProgressed, TaskSettled, TaskStarted } from './events.js';
import { stepper } from './step.js';
import { dropOldest, emptyWindow, oldest, push, windowSize, type Window } from './window.js';
import { pendingTask, type taskMachine } from './task.js';

export type TaskSnapshot = SnapshotFrom<typeof taskMachine>;

/** What the agent sees of earlier turns: user texts and the assistant's messages, oldest first. */
export interface MemoryEntry {
  readonly role: 'user' | 'assistant';
  readonly task_id: string;
  readonly text: string;
  readonly at: number;
}

export interface SessionLimits extends Retention {
  /** Memory kept for the agent: at most this many entries... (oldest dropped first) */
  readonly memoryMaxEntries: number;
  /** ...and at most this many characters of text, the newest entry always kept. */
  readonly memoryMaxChars: number;
}

export interface SessionContext {
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
  /** The latest `system_prelude` sent on this session: standing context for every later turn. */
  readonly prelude: string | undefined;
  readonly memory: Window<MemoryEntry>;
  /** Characters of text in `memory`. */
  readonly memoryChars: number;
  readonly endedAt: number | undefined;
  readonly endReason: EndReason | undefined;
  readonly limits: SessionLimits;
}

/** Adds to the agent's memory within both bounds: one client must not pin unbounded text in memory. */
function remember(context: SessionContext, entry: MemoryEntry): Pick<SessionContext, 'memory' | 'memoryChars'> {
  const { memoryMaxEntries, memoryMaxChars } = context.limits;
  let memory = context.memory;
  let chars = context.memoryChars + entry.text.length;
  if (windowSize(memory) >= memoryMaxEntries) {
    chars -= oldest(memory)!.text.length;
    memory = dropOldest(memory, 1);
  }
  memory = push(memory, entry, Number.MAX_SAFE_INTEGER);
  while (windowSize(memory) > 1 && chars > memoryMaxChars) {
    chars -= oldest(memory)!.text.length;
    memory = dropOldest(memory, 1);
  }
  return { memory, memoryChars: chars };
}

function started(context: SessionContext, event: TaskStarted): Partial<SessionContext> {
  return {
    pending: new Map(context.pending).set(event.task_id, pendingTask({ task_id: event.task_id, at: event.at })),
    prelude: event.system_prelude ?? context.prelude,
    ...remember(context, { role: 'user', task_id: event.task_id, text: event.text, at: event.at }),
    lastActivityAt: event.at,
  };
}

/** Progress is the task table's self-loop (pending stays pending, nothing changes): only activity moves. */
function progressed(event: TaskProgressed): Partial<SessionContext> {
  return { lastActivityAt: event.at };
}

function settled(context: SessionContext, event: TaskSettled): Partial<SessionContext> {
  const pending = new Map(context.pending);
  pending.delete(event.task_id);
  const reply = { seq: event.seq, id: `${event.epoch}:${context.backlog.generation}:${event.seq}`, task_id: event.task_id, data: event.data, bytes: replyBytes(event.data) };
  return {
    pending,
    backlog: retain(context.backlog, event.epoch, reply, context.limits),
    ...(event.reply.status === 'message'
      ? remember(context, { role: 'assistant', task_id: event.task_id, text: event.reply.reply_text, at: event.at })
      : {}),
    lastActivityAt: event.at,
  };
}

function initialContext(opened: SessionOpened, limits: SessionLimits): SessionContext {
  return {
    session_id: opened.session_id,
    openedAt: opened.at,
    lastActivityAt: opened.at,
    backlog: emptyBacklog(opened.generation),
    pending: new Map(),
    prelude: undefined,
    memory: emptyWindow(),
    memoryChars: 0,
    endedAt: undefined,
    endReason: undefined,
    limits,
  };
}

const SCRATCH = initialContext(
  { type: 'session.opened', session_id: '', generation: '0', at: 0 },
  { maxReplies: 0, maxBytes: 0, ledgerMaxTasks: 0, maxSpans: 0, memoryMaxEntries: 0, memoryMaxChars: 0 },
);

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    input: {} as { opened: SessionOpened; limits: SessionLimits },
    events: {} as Exclude<SessionEvent, SessionOpened>,
  },
  actions: {
    startTask: assign(({ context, event }) => started(context, event as TaskStarted)),
    progressTask: assign(({ event }) => progressed(event as TaskProgressed)),
    settleTask: assign(({ context, event }) => settled(context, event as TaskSettled)),
    end: assign(({ event }) => {
      const ended = event as Extract<SessionEvent, { type: 'session.ended' }>;
      return { endedAt: ended.at, endReason: ended.reason, lastActivityAt: ended.at };
    }),
  },
}).createMachine({
  id: 'session',
  // `transition()` evaluates this with no input when it builds its scratch actor: keep it total and cheap.
  context: ({ input }) => (input === undefined ? SCRATCH : initialContext(input.opened, input.limits)),
  initial: 'open',
  states: {
    open: {
      on: {
        'task.started': { actions: 'startTask' },
        'task.progressed': { actions: 'progressTask' },
        'task.settled': { actions: 'settleTask' },
        'reply.dropped': {},
        'session.ended': { target: 'ended', actions: 'end' },
      },
    },
    ended: {
      on: {
        'reply.dropped': {},
      },
    },
  },
});

export type SessionSnapshot = SnapshotFrom<typeof sessionMachine>;

const session = stepper(sessionMachine);

export function openSession(opened: SessionOpened, limits: SessionLimits): SessionSnapshot {
  return session.initial({ opened, limits })[0];
}

/** evolve: folds one logged event into the session. */
export function evolveSession(snapshot: SessionSnapshot, event: Exclude<SessionEvent, SessionOpened>): SessionSnapshot {
  return session.next(snapshot, event)[0];
}

/** The session's pending tasks in the order they started. */
export function pendingInOrder(session: SessionSnapshot): TaskSnapshot[] {
  return [...session.context.pending.values()];
}

export function isEnded(session: SessionSnapshot): boolean {
  return session.value === 'ended';
}
