/**
 * What the after-commit actors (agent runs, the outbox pump, idle deadlines) may ask of the engine: to
 * decide and append a command, or to append what another decider decided. Nothing else: they never fold,
 * write to the log or read its batch themselves.
 */
import type { Outcome, SessionCommand } from '../../machines/chat/commands.js';
import type { DomainEvent } from '../../machines/chat/events.js';
import type { ReportFailure } from '../core/failures.js';

export interface CommandPort {
  /** This process's epoch: commands that may settle a task carry it. */
  readonly epoch: string;
  /** True once `close()` began: effects stop, and commands are refused with `HostClosingError`. */
  readonly closing: boolean;
  /** Decides a session command, appends its events, and resolves with the outcome once they are committed. */
  run(command: SessionCommand): Promise<Outcome>;
  /** Appends events another decider decided (the outbox's); resolves once committed. */
  append(events: readonly DomainEvent[]): Promise<void>;
  /** Reports a failure nobody awaits. */
  readonly report: ReportFailure;
}
