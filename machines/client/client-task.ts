/**
 * A task as the client sees it (3.1, 4.2): sent, accepted, then pending until its one terminal reply.
 * Progress may come on the way (and, from a quick agent, even before the 202: PROTOCOL.md 1.3a). A task
 * is lost only when a resync frame names it (its reply was evicted from the backlog); one a resync frame
 * does not name stays as it was (3.1, 7). 3.1's reconnect rows are this machine's (PROTOCOL.md 8.8).
 *
 * | State   | Event           | Next    | Note                                            |
 * |---------|-----------------|---------|-------------------------------------------------|
 * | sending | task.accepted   | pending | the host logged it (202)                        |
 * | sending | task.refused    | refused | a 4xx, or the session had ended                 |
 * | sending | reply.progress  | sending | a quick agent's progress, before the 202        |
 * | sending | reply.terminal  | replied | a quick agent's reply, before the 202           |
 * | sending | resync.missed   | lost    | named in `missed_task_ids`                      |
 * | sending | resync.unlisted | sending | a resync frame that does not name it            |
 * | pending | reply.progress  | pending | typing, tool_call: the latest is shown          |
 * | pending | reply.terminal  | replied | its one terminal reply                          |
 * | pending | resync.missed   | lost    | named in `missed_task_ids`: its reply is gone   |
 * | pending | resync.unlisted | pending | never inferred lost, `recovery_complete` or not |
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import type { ProgressReply, TerminalReply } from '../../protocol/wire.js';
import { stepper } from '../core/step.js';

export type ClientTaskEvent =
  | { readonly type: 'task.accepted'; readonly at: number }
  | { readonly type: 'task.refused'; readonly code: string; readonly message: string; readonly at: number }
  | { readonly type: 'reply.progress'; readonly reply: ProgressReply; readonly at: number }
  | { readonly type: 'reply.terminal'; readonly reply: TerminalReply; readonly at: number }
  | { readonly type: 'resync.missed'; readonly at: number }
  | { readonly type: 'resync.unlisted'; readonly at: number };

export interface ClientTaskContext {
  readonly session_id: string;
  readonly task_id: string;
  readonly sent_at: number;
  /** The latest progress (typing, a tool call), until the reply. */
  readonly progress: ProgressReply | undefined;
  readonly reply: TerminalReply | undefined;
  readonly refusal: { readonly code: string; readonly message: string } | undefined;
}

export interface ClientTaskInput {
  readonly session_id: string;
  readonly task_id: string;
  readonly at: number;
}

export const clientTaskMachine = setup({
  types: { context: {} as ClientTaskContext, input: {} as ClientTaskInput, events: {} as ClientTaskEvent },
  actions: {
    progress: assign((_, event: Extract<ClientTaskEvent, { type: 'reply.progress' }>) => ({ progress: event.reply })),
    reply: assign((_, event: Extract<ClientTaskEvent, { type: 'reply.terminal' }>) => ({ reply: event.reply, progress: undefined })),
    refuse: assign((_, event: Extract<ClientTaskEvent, { type: 'task.refused' }>) => ({
      refusal: { code: event.code, message: event.message },
    })),
  },
}).createMachine({
  id: 'clientTask',
  // `transition()` evaluates this with no input when it builds its scratch actor: keep it total and cheap.
  context: ({ input }) => ({
    session_id: input?.session_id ?? '',
    task_id: input?.task_id ?? '',
    sent_at: input?.at ?? 0,
    progress: undefined,
    reply: undefined,
    refusal: undefined,
  }),
  initial: 'sending',
  states: {
    sending: {
      on: {
        'task.accepted': { target: 'pending' },
        'task.refused': { target: 'refused', actions: { type: 'refuse', params: ({ event }) => event } },
        'reply.progress': { target: 'sending', actions: { type: 'progress', params: ({ event }) => event } },
        'reply.terminal': { target: 'replied', actions: { type: 'reply', params: ({ event }) => event } },
        'resync.missed': { target: 'lost' },
        'resync.unlisted': {},
      },
    },
    pending: {
      on: {
        'reply.progress': { target: 'pending', actions: { type: 'progress', params: ({ event }) => event } },
        'reply.terminal': { target: 'replied', actions: { type: 'reply', params: ({ event }) => event } },
        'resync.missed': { target: 'lost' },
        'resync.unlisted': {},
      },
    },
    replied: { type: 'final' },
    refused: { type: 'final' },
    lost: { type: 'final' },
  },
});

export type ClientTaskSnapshot = SnapshotFrom<typeof clientTaskMachine>;
export type ClientTaskState = 'sending' | 'pending' | 'replied' | 'refused' | 'lost';

const task = stepper(clientTaskMachine);

export function initialClientTask(input: ClientTaskInput): ClientTaskSnapshot {
  return task.initial(input)[0];
}

export function evolveClientTask(snapshot: ClientTaskSnapshot, event: ClientTaskEvent): ClientTaskSnapshot {
  return task.next(snapshot, event)[0];
}

export function clientTaskState(snapshot: ClientTaskSnapshot): ClientTaskState {
  return snapshot.value as ClientTaskState;
}
