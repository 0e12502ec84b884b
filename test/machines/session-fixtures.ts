/** Shared by the session and decider tests: limits, a fold over logged events, and a decide-then-fold loop. */
import { decide, type Decision, type SessionCommand } from '../../src/machines/decide.js';
import type { SessionEvent } from '../../src/machines/events.js';
import { evolveSession, openSession, type SessionLimits, type SessionSnapshot } from '../../src/machines/session.js';
import { windowToArray } from '../../src/machines/window.js';

export const LIMITS_SPEC: SessionLimits = {
  maxReplies: 64,
  maxBytes: 1024 * 1024,
  ledgerMaxTasks: 1024,
  maxSpans: 64,
  memoryMaxEntries: 200,
  memoryMaxChars: 1024 * 1024,
};

/** Folds logged events as the engine does: `session.opened` opens, the rest evolve. */
export function fold(events: readonly SessionEvent[], limits: SessionLimits = LIMITS_SPEC, from?: SessionSnapshot): SessionSnapshot | undefined {
  let session = from;
  for (const event of events) {
    if (event.type === 'session.opened') session = openSession(event, limits);
    else if (session === undefined) throw new Error(`${event.type} before session.opened`);
    else session = evolveSession(session, event);
  }
  return session;
}

/** One session as the engine drives it: decide against the current snapshot, then fold what was decided. */
export class Harness {
  session: SessionSnapshot | undefined;
  readonly log: SessionEvent[] = [];
  private readonly started = new Set<string>();

  constructor(private readonly limits: SessionLimits = LIMITS_SPEC) {}

  run(command: SessionCommand): Decision {
    const decision = decide(command, this.session, { taskKnown: (id) => this.started.has(id) });
    for (const event of decision.events) if (event.type === 'task.started') this.started.add(event.task_id);
    this.session = fold(decision.events, this.limits, this.session);
    this.log.push(...decision.events);
    return decision;
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
