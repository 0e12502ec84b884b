/**
 * What an event log file is: ours (`PRAGMA application_id`, "ARLY"), of one layout (`user_version`), its
 * events append-only by trigger, and private, since it holds callback tokens. A file is judged before
 * anything is written to it: an empty one becomes ours, any other must be ours already.
 */
import Database from 'better-sqlite3';
import { EventLogPermissionsError, SchemaMismatchError } from './errors.js';
import { createPrivateFile, exposure } from './private-files.js';

/** Our files say who they are (`PRAGMA application_id`, "ARLY") and which layout they have. */
export const APPLICATION_ID = 0x41524c59;
export const LOG_SCHEMA_VERSION = 1;
export const APPEND_ONLY_DELETE = `CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
  BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END`;

/**
 * Creates the file if it is absent, then judges it before anything is written to it: true for an
 * empty file, which becomes ours; throws for a file that is not a log of ours (or of another
 * version), then for a log that others can access. The reading connection is read-only because one
 * that may write checkpoints the -wal into the log and removes it on close: a refused log must be
 * left as it was.
 */
export function judgeLogFile(path: string): boolean {
  createPrivateFile(path);
  const notOurs = () => new SchemaMismatchError(`${path} is not an assistant-relay event log`);
  const db = new Database(path, { readonly: true, fileMustExist: true });
  let applicationId: number, version: number, tables: number;
  try {
    applicationId = db.pragma('application_id', { simple: true }) as number;
    version = db.pragma('user_version', { simple: true }) as number;
    tables = (db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table'").get() as { n: number }).n;
  } catch (error) {
    if (error instanceof Database.SqliteError && error.code === 'SQLITE_NOTADB') throw notOurs();
    throw error;
  } finally {
    db.close();
  }
  const fresh = applicationId === 0 && version === 0 && tables === 0;
  if (!fresh && applicationId !== APPLICATION_ID) throw notOurs();
  if (!fresh && version !== LOG_SCHEMA_VERSION) {
    throw new SchemaMismatchError(`${path} has event log schema version ${version}; this build reads version ${LOG_SCHEMA_VERSION}`);
  }
  // Judged after the read, which may have created a -wal and -shm (with the log's own mode): the advice names every file there is.
  const exposed = exposure([path, `${path}-wal`, `${path}-shm`]);
  if (exposed !== undefined) throw new EventLogPermissionsError(`the event log holds callback tokens and is not private: ${exposed}`);
  return fresh;
}

/** Makes an empty file a log of ours. */
export function createLogSchema(db: Database.Database): void {
  // One transaction: a crash half way must not leave a file that is neither empty nor ours.
  db.exec(`
    BEGIN;
    CREATE TABLE events (
      position INTEGER PRIMARY KEY,
      stream TEXT NOT NULL,
      type TEXT NOT NULL,
      at INTEGER NOT NULL,
      data TEXT NOT NULL
    ) STRICT;
    CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
      BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
    ${APPEND_ONLY_DELETE};
    PRAGMA application_id = ${APPLICATION_ID};
    PRAGMA user_version = ${LOG_SCHEMA_VERSION};
    COMMIT;
  `);
}
