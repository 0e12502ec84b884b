/**
 * The conversation (Form B, 3.2): append-only, keyed by session_id, with no task states. Either side
 * adds messages at any time; `message` is repeatable and closes nothing, so nothing finalizes a turn and
 * no timeout kills a slow or multi-step one. Everything the assistant adds goes to the latest callback
 * the client advertised. The statechart folds logged events; `decideConversation` decides them.
 *
 * | State | Event            | Next  | Effect on context                                                   |
 * |-------|------------------|-------|---------------------------------------------------------------------|
 * | open  | message.received | open  | joins memory; its callback, if any, is now the session's; its run starts |
 * | open  | reply.queued     | open  | queued for the callback; a `message` joins memory; activity (`typing` resets the inactivity timer) |
 * | open  | turn.finished    | open  | the agent's run for that message ended                              |
 * | open  | session.ended    | ended | memory, prelude, task ids, runs and the callback go                 |
 * | ended | reply.dropped    | ended | nothing: the agent spoke after the end                              |
 *
 * An open conversation drops nothing: whatever the agent says, even after its run, is queued.
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import type { CallbackBlock } from '../../protocol/index.js';
import type { ConversationEvent, EndReason, MessageReceived, ReplyQueued, SessionEnded, SessionOpened, TurnFinished } from './events.js';
import { remember, type MemoryEntry, type MemoryLimits } from './memory.js';
import { stepper } from '../core/step.js';
import { rememberTaskId, type TaskIdLimits } from './task-ids.js';
import { emptyWindow, type Window } from '../core/window.js';

export interface ConversationLimits extends MemoryLimits, TaskIdLimits {}

export interface HostConversationContext {
  readonly session_id: string;
  readonly openedAt: number;
  /** Last logged activity; the idle deadline is this plus the host's idle TTL. */
  readonly lastActivityAt: number;
  /** The latest callback advertised: where every reply queued from now on goes (4.3 rule 2). */
  readonly callback: CallbackBlock | undefined;
  /** The latest `system_prelude`: standing context for every later turn. */
  readonly prelude: string | undefined;
  readonly memory: Window<MemoryEntry>;
  readonly memoryChars: number;
  /** User messages whose agent run has not finished, in arrival order: a restart interrupts these. */
  readonly running: ReadonlySet<string>;
  /** The newest user message ids: the duplicate check for retried POSTs. */
  readonly taskIds: Window<string>;
  /** Callback deliveries queued so far: the next one is numbered one more. */
  readonly deliveries: number;
  readonly endedAt: number | undefined;
  readonly endReason: EndReason | undefined;
  readonly limits: ConversationLimits;
}

function received(context: HostConversationContext, event: MessageReceived): Partial<HostConversationContext> {
  return {
    callback: event.callback ?? context.callback,
    prelude: event.system_prelude ?? context.prelude,
    ...remember(context, { role: 'user', task_id: event.task_id, text: event.text, at: event.at }, context.limits),
    running: new Set(context.running).add(event.task_id),
    taskIds: rememberTaskId(context.taskIds, event.task_id, context.limits),
    lastActivityAt: event.at,
  };
}

function queued(context: HostConversationContext, event: ReplyQueued): Partial<HostConversationContext> {
  const { reply } = event;
  return {
    deliveries: event.delivery.n,
    ...(reply.status === 'message'
      ? remember(context, { role: 'assistant', task_id: event.delivery.task_id, text: reply.reply_text, at: event.at }, context.limits)
      : {}),
    lastActivityAt: event.at,
  };
}

function finished(context: HostConversationContext, event: TurnFinished): Partial<HostConversationContext> {
  const running = new Set(context.running);
  running.delete(event.task_id);
  return { running };
}

/** An ended conversation only answers "ended": what fed the agent, the duplicate check and its callback go (queued replies keep their own). */
function ended(event: SessionEnded): Partial<HostConversationContext> {
  return {
    endedAt: event.at,
    endReason: event.reason,
    lastActivityAt: event.at,
    prelude: undefined,
    memory: emptyWindow(),
    memoryChars: 0,
    running: new Set(),
    taskIds: emptyWindow(),
    callback: undefined,
  };
}

function initialContext(opened: SessionOpened, limits: ConversationLimits): HostConversationContext {
  return {
    session_id: opened.session_id,
    openedAt: opened.at,
    lastActivityAt: opened.at,
    callback: undefined,
    prelude: undefined,
    memory: emptyWindow(),
    memoryChars: 0,
    running: new Set(),
    taskIds: emptyWindow(),
    deliveries: 0,
    endedAt: undefined,
    endReason: undefined,
    limits,
  };
}

const SCRATCH = initialContext(
  { type: 'session.opened', session_id: '', generation: '0', form: 'B', at: 0 },
  { memoryMaxEntries: 0, memoryMaxChars: 0, taskIdWindow: 0 },
);

export const conversationMachine = setup({
  types: {
    context: {} as HostConversationContext,
    input: {} as { opened: SessionOpened; limits: ConversationLimits },
    events: {} as Exclude<ConversationEvent, SessionOpened>,
  },
  actions: {
    receive: assign(({ context }, event: MessageReceived) => received(context, event)),
    queue: assign(({ context }, event: ReplyQueued) => queued(context, event)),
    finishTurn: assign(({ context }, event: TurnFinished) => finished(context, event)),
    end: assign((_, event: SessionEnded) => ended(event)),
  },
}).createMachine({
  id: 'conversation',
  // `transition()` evaluates this with no input when it builds its scratch actor: keep it total and cheap.
  context: ({ input }) => (input === undefined ? SCRATCH : initialContext(input.opened, input.limits)),
  initial: 'open',
  states: {
    open: {
      on: {
        'message.received': { actions: { type: 'receive', params: ({ event }) => event } },
        'reply.queued': { actions: { type: 'queue', params: ({ event }) => event } },
        'turn.finished': { actions: { type: 'finishTurn', params: ({ event }) => event } },
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

export type ConversationSnapshot = SnapshotFrom<typeof conversationMachine>;

const conversation = stepper(conversationMachine);

export function initialConversation(opened: SessionOpened, limits: ConversationLimits): ConversationSnapshot {
  return conversation.initial({ opened, limits })[0];
}

/** Folds one logged event into the conversation. */
export function evolveConversation(snapshot: ConversationSnapshot, event: Exclude<ConversationEvent, SessionOpened>): ConversationSnapshot {
  return conversation.next(snapshot, event)[0];
}

export function isConversationEnded(conversation: ConversationSnapshot): boolean {
  return conversation.value === 'ended';
}
