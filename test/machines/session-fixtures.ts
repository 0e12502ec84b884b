/** Shared by the session and decider tests: limits, a fold over logged events, and a decide-then-fold loop. */
import { foldEvents, type Decision } from '../../machines/core/decider.js';
import type { Outcome, SessionCommand } from '../../machines/chat/commands.js';
import type { TaskSessionEvent } from '../../machines/chat/events.js';
import { taskSessionDecider, type TaskSessionState } from '../../machines/chat/task-session-decider.js';
import type { SessionLimits, TaskSessionSnapshot } from '../../machines/chat/task-session.js';
import { windowToArray } from '../../machines/core/window.js';
import { deciderSpecification, type Then } from '../support/decider.js';

export const LIMITS_SPEC: SessionLimits = {
  maxReplies: 64,
  maxBytes: 1024 * 1024,
  ledgerMaxTasks: 1024,
  maxSpans: 64,
  memoryMaxEntries: 200,
  memoryMaxChars: 1024 * 1024,
  taskIdWindow: 1024,
};

export const decider = taskSessionDecider(LIMITS_SPEC);

/** Folds logged events as the engine does, with the decider's own `evolve`. */
export function fold(
  events: readonly TaskSessionEvent[],
  limits: SessionLimits = LIMITS_SPEC,
  from?: TaskSessionSnapshot,
): TaskSessionState {
  return foldEvents(taskSessionDecider(limits), events, from);
}

/**
 * One session as the engine drives it, read as given → when → then: the events logged so far are the
 * given (`deciderSpecification` folds them from the decider's initial state for every `when`), and
 * what a command decides is logged in turn.
 */
export class Harness {
  session: TaskSessionState;
  readonly log: TaskSessionEvent[] = [];
  private readonly decider: ReturnType<typeof taskSessionDecider>;

  constructor(limits: SessionLimits = LIMITS_SPEC) {
    this.decider = taskSessionDecider(limits);
    this.session = this.decider.initialState;
  }

  run(command: SessionCommand): Decision<TaskSessionEvent, Outcome> {
    return this.when(command).decision;
  }

  when(command: SessionCommand): Then<TaskSessionEvent, Outcome> {
    const then = deciderSpecification(this.decider).given(this.log).when(command);
    this.session = foldEvents(this.decider, then.decision.events, this.session);
    this.log.push(...then.decision.events);
    return then;
  }

  get context() {
    if (this.session === undefined) throw new Error('no session');
    return this.session.context;
  }

  get pendingIds(): string[] {
    return [...this.context.pending.keys()];
  }

  get backlogIds(): string[] {
    return windowToArray(this.context.backlog.replies).map((r) => r.id);
  }
}
