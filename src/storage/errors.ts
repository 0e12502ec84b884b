/**
 * The event log's errors. Each has a stable `code`, for programs (a supervisor, the CLI's log line);
 * the message is for people. The codes:
 *
 * | code | error | when |
 * |---|---|---|
 * | `event_log_locked` | `EventLogLockedError` | the log is open already, in another process or this one; `holder` says which, if it could be read |
 * | `event_log_schema_mismatch` | `SchemaMismatchError` | the file is not an assistant-relay event log, or has another schema version |
 * | `event_log_permissions` | `EventLogPermissionsError` | the log, its `-wal` or its `-shm` can be accessed by other users |
 * | `event_log_closed` | `EventLogClosedError` | an append after `close()` |
 * | `event_log_write_failed` | `EventLogWriteError` | a batch could not be committed (its `cause` says why); every later append fails too |
 *
 * Anything else (a folder that cannot be created, a disk that is gone) is the system's own error, with
 * its own `code` (`EACCES`, `SQLITE_CANTOPEN`, …).
 */
import type { LockHolder } from './log-lock.js';

export type EventLogErrorCode =
  | 'event_log_locked'
  | 'event_log_schema_mismatch'
  | 'event_log_permissions'
  | 'event_log_closed'
  | 'event_log_write_failed';

export abstract class EventLogError extends Error {
  abstract readonly code: EventLogErrorCode;
}

export class EventLogLockedError extends EventLogError {
  override readonly name = 'EventLogLockedError';
  readonly code = 'event_log_locked';

  constructor(
    readonly path: string,
    /** Undefined in the instant between the holder taking the lock and recording itself. */
    readonly holder: LockHolder | undefined,
  ) {
    super(
      holder === undefined
        ? `the event log ${path} is already open, by a process that has not recorded itself yet`
        : `the event log ${path} is already open, by pid ${holder.pid} on ${holder.host} since ${holder.since}`,
    );
  }
}

export class SchemaMismatchError extends EventLogError {
  override readonly name = 'SchemaMismatchError';
  readonly code = 'event_log_schema_mismatch';
}

export class EventLogPermissionsError extends EventLogError {
  override readonly name = 'EventLogPermissionsError';
  readonly code = 'event_log_permissions';
}

export class EventLogClosedError extends EventLogError {
  override readonly name = 'EventLogClosedError';
  readonly code = 'event_log_closed';

  constructor() {
    super('the event log is closed');
  }
}

export class EventLogWriteError extends EventLogError {
  override readonly name = 'EventLogWriteError';
  readonly code = 'event_log_write_failed';

  constructor(cause: unknown) {
    super(`the event log could not commit a batch: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}
