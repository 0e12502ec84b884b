/**
 * One process writes an event log at a time: two writers would leave a log that cannot be folded, and the
 * append-only triggers would block any repair.
 *
 * The lock is SQLite's own write lock on a sidecar file, `<log>.lock`: an empty database in which the
 * holder begins a write transaction (`BEGIN IMMEDIATE`, a RESERVED lock) and keeps it open for the life
 * of the log. It is a POSIX record lock, so the OS releases it when the holder dies, SIGKILL included,
 * and SQLite tracks it per file across the connections of one process, so a second open in the same
 * process is refused too. With `timeout: 0` a contender is refused at once. Only RESERVED, never
 * EXCLUSIVE: RESERVED is taken atomically by one contender, where EXCLUSIVE would wait for the shared
 * locks of the others and two simultaneous starts could both be refused. The log itself stays in
 * normal locking mode, so other processes can read it while it is held.
 *
 * Once it holds the lock, the holder records itself (pid, host, since when) in `<log>.holder`, which a
 * refused contender reads to name it. That record cannot be written in the same instant as the lock
 * is taken: a contender refused in between names no one (or, after a crash, the holder before).
 *
 * Never open `<log>.lock` by other means in a process that may hold it: closing any descriptor of a
 * file releases every POSIX lock the process has on it.
 */
import Database from 'better-sqlite3';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { EventLogLockedError } from './errors.js';
import { LockHolder } from './lock-holder.js';
import { createPrivateFile } from './private-files.js';

export class LogLock {
  private constructor(
    private readonly lock: Database.Database,
    private readonly holderPath: string,
  ) {}

  /** Takes the lock of the log at `logPath`, or throws `EventLogLockedError` naming who has it. */
  static acquire(logPath: string): LogLock {
    const lockPath = `${logPath}.lock`;
    const holderPath = `${logPath}.holder`;
    createPrivateFile(lockPath);
    const lock = new Database(lockPath, { timeout: 0 });
    try {
      // The transaction never commits, so it need not survive a crash: no -journal file beside the lock.
      lock.pragma('journal_mode = MEMORY');
      lock.exec('BEGIN IMMEDIATE');
    } catch (error) {
      lock.close();
      if (error instanceof Database.SqliteError && error.code === 'SQLITE_BUSY')
        throw new EventLogLockedError(logPath, readHolder(holderPath));
      throw error;
    }
    const holder: LockHolder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
    try {
      writeFileSync(holderPath, `${JSON.stringify(holder)}\n`, { mode: 0o600 });
    } catch (error) {
      lock.close();
      throw error;
    }
    return new LogLock(lock, holderPath);
  }

  /** Removes the record while still holding the lock (after, it could be the next holder's), then releases it. */
  release(): void {
    try {
      rmSync(this.holderPath, { force: true });
    } finally {
      this.lock.close();
    }
  }
}

function readHolder(holderPath: string): LockHolder | undefined {
  try {
    return LockHolder.parse(JSON.parse(readFileSync(holderPath, 'utf8')));
  } catch {
    // Not written yet, or half written: the holder is unknown, not an error of ours.
    return undefined;
  }
}
