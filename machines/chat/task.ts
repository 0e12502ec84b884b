/**
 * The task lifecycle (3.1) as the host holds it: one task per user message, pending until its first
 * terminal reply. 3.1's reconnect rows are the client's view (a resync frame names only tasks the host
 * already settled, whose replies it then evicted): they are `machines/client-task.ts`'s (PROTOCOL.md 8.8).
 *
 * | State   | Event           | Next    | Note                                                          |
 * |---------|-----------------|---------|---------------------------------------------------------------|
 * | pending | reply.progress  | pending | typing / tool_call: live-only, no id                          |
 * | pending | reply.terminal  | settled | message, completed, errored, silent (reply_too_large included)|
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import type { CallbackBlock, TerminalReply } from '../../protocol/index.js';
import { stepper } from '../core/step.js';

export interface TaskContext {
  readonly task_id: string;
  readonly startedAt: number;
  /** Where this task's replies go instead of the stream (4.3 rule 1), if its incoming event said. */
  readonly callback?: CallbackBlock;
  readonly settledAt?: number;
  readonly reply?: TerminalReply;
}

export type TaskMachineEvent = { type: 'reply.progress'; at: number } | { type: 'reply.terminal'; reply: TerminalReply; at: number };

export interface TaskInput {
  readonly task_id: string;
  readonly at: number;
  readonly callback?: CallbackBlock;
}

function initialContext(input: TaskInput | undefined): TaskContext {
  const context = { task_id: input?.task_id ?? '', startedAt: input?.at ?? 0 };
  return input?.callback === undefined ? context : { ...context, callback: input.callback };
}

export const taskMachine = setup({
  types: {
    context: {} as TaskContext,
    input: {} as TaskInput,
    events: {} as TaskMachineEvent,
  },
}).createMachine({
  id: 'task',
  // `transition()` evaluates this with no input when it builds its scratch actor: keep it total and cheap.
  context: ({ input }) => initialContext(input),
  initial: 'pending',
  states: {
    pending: {
      on: {
        'reply.progress': {},
        'reply.terminal': {
          target: 'settled',
          actions: assign(({ event }) => ({ settledAt: event.at, reply: event.reply })),
        },
      },
    },
    settled: { type: 'final' },
  },
});

const task = stepper(taskMachine);

/** A task just started: the machine's initial snapshot. */
export function initialTask(input: TaskInput): SnapshotFrom<typeof taskMachine> {
  return task.initial(input)[0];
}
