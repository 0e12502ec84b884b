/**
 * The task lifecycle (3.1), as a statechart. One task per user message; it is pending until its first
 * terminal reply. The host drives `reply.*`; a client drives `resync.*` from the reconciliation frame.
 *
 * | State   | Event           | Next            | Note                                              |
 * |---------|-----------------|-----------------|---------------------------------------------------|
 * | pending | reply.progress  | pending         | typing / tool_call: live-only, no id              |
 * | pending | reply.terminal  | settled.answered| message, completed, errored, silent               |
 * | pending | resync.missed   | settled.failed  | task_id listed in missed_task_ids: reply evicted  |
 * | pending | resync.unlisted | pending         | unnamed tasks are never inferred lost             |
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import type { CallbackBlock, TerminalReply } from '../protocol/index.js';
import { stepper } from './step.js';

export interface TaskContext {
  readonly task_id: string;
  readonly startedAt: number;
  /** Where this task's replies go instead of the stream (4.3 rule 1), if its incoming event said. */
  readonly callback?: CallbackBlock;
  readonly settledAt?: number;
  readonly reply?: TerminalReply;
}

export type TaskMachineEvent =
  | { type: 'reply.progress'; at: number }
  | { type: 'reply.terminal'; reply: TerminalReply; at: number }
  | { type: 'resync.missed'; at: number }
  | { type: 'resync.unlisted'; at: number };

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
          target: 'settled.answered',
          actions: assign(({ event }) => ({ settledAt: event.at, reply: event.reply })),
        },
        'resync.missed': {
          target: 'settled.failed',
          actions: assign(({ event }) => ({ settledAt: event.at })),
        },
        'resync.unlisted': {},
      },
    },
    settled: {
      initial: 'answered',
      states: { answered: { type: 'final' }, failed: { type: 'final' } },
    },
  },
});

const task = stepper(taskMachine);

/** A task just started: the machine's initial snapshot. */
export function initialTask(input: TaskInput): SnapshotFrom<typeof taskMachine> {
  return task.initial(input)[0];
}
