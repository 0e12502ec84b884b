/**
 * The durable baselines' log: one SQLite table (a primary key and the JSON text) in WAL mode with
 * `synchronous=NORMAL`, as the relay's event log opens its file (storage/event-log.ts). Appends join one
 * batch, committed in one transaction at the end of the event-loop turn (`setImmediate`); each append's
 * callback runs only once its batch is committed, so nothing is acknowledged or sent before it is durable.
 */
import Database from 'better-sqlite3';

export type Append = (record: object, committed: () => void) => void;

export function openLog(file: string): { append: Append; close: () => void } {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY, data TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO log (data) VALUES (?)');
  let batch: string[] = [];
  let waiting: Array<() => void> = [];
  const commit = db.transaction((rows: readonly string[]) => {
    for (const row of rows) insert.run(row);
  });
  const endTurn = () => {
    const rows = batch;
    const then = waiting;
    batch = [];
    waiting = [];
    commit(rows);
    for (const committed of then) committed();
  };
  return {
    append(record, committed) {
      if (batch.length === 0) setImmediate(endTurn);
      batch.push(JSON.stringify(record));
      waiting.push(committed);
    },
    close: () => db.close(),
  };
}
