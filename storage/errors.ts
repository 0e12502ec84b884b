/**
 * The event log's errors. Each has a stable `code` from the catalogue's `LOG_ERRORS`
 * (protocol/errors.ts, where every code an operator can see is defined), for programs (a supervisor,
 * the CLI's log line); the message, for people, says what this file and this moment were.
 *
 * Anything else (a folder that cannot be created, a disk that is gone) is the system's own error, with
 * its own `code` (`EACCES`, `SQLITE_CANTOPEN`, …).
 */
import type { LogErrorCode } from '../protocol/errors.js';
import type { LockHolder } from './lock-holder.js';
import type { Fence } from './partitions.js';

export type EventLogErrorCode = LogErrorCode;

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

/** An append as a partition's owner whose lease no longer holds (storage/partitions.ts): nothing was appended. */
export class FencedError extends EventLogError {
  override readonly name = 'FencedError';
  readonly code = 'event_log_fenced';

  constructor(readonly fence: Fence) {
    super(`node ${fence.node} no longer holds the lease of partition ${JSON.stringify(fence.partition)} with token ${fence.token}`);
  }
}

/** An append whose decision creates a partition that exists already (storage/partitions.ts): nothing was appended. */
export class PartitionExistsError extends EventLogError {
  override readonly name = 'PartitionExistsError';
  readonly code = 'event_log_partition_exists';

  constructor(readonly partitions: readonly string[]) {
    super(`the partitions ${partitions.map((p) => JSON.stringify(p)).join(', ')} exist already`);
  }
}
