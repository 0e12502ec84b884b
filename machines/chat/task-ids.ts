/**
 * The duplicate check for `task_id` (PROTOCOL.md 1.3): a session remembers the ids of its newest user
 * messages, so a client's retried POST is answered `duplicate` rather than started twice. Bounded, so a
 * long session cannot pin every id it ever saw; an id older than the window starts a new task.
 */
import { push, windowIncludes, type Window } from '../core/window.js';

export interface TaskIdLimits {
  /** How many of the newest task ids a session remembers. */
  readonly taskIdWindow: number;
}

export function rememberTaskId(taskIds: Window<string>, taskId: string, limits: TaskIdLimits): Window<string> {
  return push(taskIds, taskId, limits.taskIdWindow);
}

export function knowsTaskId(taskIds: Window<string>, taskId: string): boolean {
  return windowIncludes(taskIds, taskId);
}
