/**
 * One Form A task as the client holds it: its statechart (`machines/client/client-task.ts`), the handle an
 * app is given (progress as it comes, one promise of its terminal reply), and why a task fails. Browser-safe.
 */
import {
  clientTaskState,
  evolveClientTask,
  initialClientTask,
  type ClientTaskEvent,
  type ClientTaskSnapshot,
} from '../../machines/client/client-task.js';
import type { ProgressReply, TerminalReply } from '../../protocol/wire.js';
import type { ClientTransition } from './form-a-options.js';

/** Why a task ended without its reply. */
export class TaskFailed extends Error {
  constructor(
    /** `lost`: a resync named it; `refused`: the host refused it (see `reason`); `closed`: the client closed first. */
    readonly kind: 'lost' | 'refused' | 'closed',
    /** The host's error code (or `session_ended`), for a refused task. */
    readonly reason: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

export interface TaskHandle {
  readonly session_id: string;
  readonly task_id: string;
  /** Its one terminal reply; rejects with `TaskFailed`. */
  readonly reply: Promise<TerminalReply>;
  /** Progress as it comes (typing, tool calls); the function returned stops listening. */
  onProgress(listener: (progress: ProgressReply) => void): () => void;
  /** The task's statechart as it stands. */
  readonly state: ClientTaskSnapshot;
}

export interface Task {
  snapshot: ClientTaskSnapshot;
  readonly listeners: Set<(progress: ProgressReply) => void>;
  resolve(reply: TerminalReply): void;
  reject(error: TaskFailed): void;
}

/** A fresh task (`sending`) and its handle. */
export function newTask(session_id: string, task_id: string, at: number): { readonly task: Task; readonly handle: TaskHandle } {
  let resolve!: (reply: TerminalReply) => void;
  let reject!: (error: TaskFailed) => void;
  const reply = new Promise<TerminalReply>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  reply.catch(() => undefined);
  const task: Task = { snapshot: initialClientTask({ session_id, task_id, at }), listeners: new Set(), resolve, reject };
  const handle: TaskHandle = {
    session_id,
    task_id,
    reply,
    onProgress: (listener) => {
      task.listeners.add(listener);
      return () => task.listeners.delete(listener);
    },
    get state() {
      return task.snapshot;
    },
  };
  return { task, handle };
}

export const isOpen = (task: Task): boolean => {
  const state = clientTaskState(task.snapshot);
  return state === 'sending' || state === 'pending';
};

/** A task's event: its statechart moves, and its handle hears of it. True when the task has ended. */
export function stepTask(task: Task, event: ClientTaskEvent, inspect: ((transition: ClientTransition) => void) | undefined): boolean {
  task.snapshot = evolveClientTask(task.snapshot, event);
  const context = task.snapshot.context;
  const { session_id, task_id } = context;
  inspect?.({ machine: 'clientTask', session_id, task_id, event, snapshot: task.snapshot });
  switch (clientTaskState(task.snapshot)) {
    case 'replied':
      task.resolve(context.reply!);
      return true;
    case 'lost': {
      const why = 'its reply was evicted before this client read it (named in a resync frame)';
      task.reject(new TaskFailed('lost', undefined, `task ${context.task_id}: ${why}`));
      return true;
    }
    case 'refused': {
      const { code, message } = context.refusal!;
      task.reject(new TaskFailed(code === 'closed' ? 'closed' : 'refused', code, message));
      return true;
    }
    default:
      if (event.type === 'reply.progress') for (const listener of task.listeners) listener(event.reply);
      return false;
  }
}
