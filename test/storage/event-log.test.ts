/**
 * The event log on real SQLite files: identity and schema checks on open, one process at a time, file
 * modes, append-only enforcement, group commit per event-loop turn with early commits for urgent
 * appends, listener ordering, and durability across a SIGKILL.
 */
import Database from 'better-sqlite3';
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventLogLockedError, EventLogPermissionsError, SchemaMismatchError } from '../../storage/errors.js';
import { EventLog, type LogRecord } from '../../storage/event-log.js';
import { EARLY_COMMITS_PER_TURN } from '../../storage/group-commit.js';
import { LOG_SCHEMA_VERSION } from '../../storage/log-file.js';
import { STREAM_INDEX_LAG } from '../../storage/stream-index.js';
import { AppendChild, killChildren } from '../support/child.js';
import { tempDir } from '../support/host.js';
import { countEvents } from '../support/log.js';

interface TestEvent extends LogRecord {
  readonly type: 'test.appended';
  readonly stream: string;
  readonly n: number;
  readonly big?: bigint;
  readonly urgent?: boolean;
}

const event = (n: number): TestEvent => ({ type: 'test.appended', at: 1_700_000_000_000 + n, stream: `s${n % 3}`, n });

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

let dir: string;
let path: string;
const opened: Array<EventLog<TestEvent>> = [];

/** Every event is urgent (the log's default) unless `urgent` says otherwise. */
function open(file = path, urgent?: (e: TestEvent) => boolean): EventLog<TestEvent> {
  const log = EventLog.open<TestEvent>({ path: file, streamOf: (e) => e.stream, ...(urgent ? { urgent } : {}) });
  opened.push(log);
  return log;
}

function raw(file = path, readonly = false): Database.Database {
  return new Database(file, { readonly, fileMustExist: true });
}

/** What `open` throws, for a closer look than toThrow gives. */
function refusal(file = path): unknown {
  try {
    open(file);
  } catch (error) {
    return error;
  }
  throw new Error(`${file} opened`);
}

const modeOf = (file: string) => statSync(file).mode & 0o777;

beforeEach(() => {
  dir = tempDir();
  path = join(dir, 'nested', 'events.db');
});
afterEach(async () => {
  await killChildren();
  await Promise.all(opened.splice(0).map((log) => log.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('opening a file', () => {
  it('creates its folder and stamps a fresh file with our application_id and schema version, in WAL mode', async () => {
    await open().close();
    const db = raw(path, true);
    expect(db.pragma('application_id', { simple: true })).toBe(0x41524c59);
    expect(db.pragma('user_version', { simple: true })).toBe(LOG_SCHEMA_VERSION);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  });

  it('reopens its own file with everything in it', async () => {
    const log = open();
    await Promise.all([event(0), event(1)].map((e) => log.append(e)));
    await log.close();
    expect([...open().read()].map((s) => s.event)).toEqual([event(0), event(1)]);
  });

  it('refuses a file with another schema version, and leaves it as it was', async () => {
    await open().close();
    const db = raw();
    db.pragma(`user_version = ${LOG_SCHEMA_VERSION + 1}`);
    db.close();
    expect(refusal()).toMatchObject({
      code: 'event_log_schema_mismatch',
      message: expect.stringMatching(`schema version ${LOG_SCHEMA_VERSION + 1}`),
    });
    expect(refusal()).toBeInstanceOf(SchemaMismatchError);
    const check = raw(path, true);
    expect(check.pragma('user_version', { simple: true })).toBe(LOG_SCHEMA_VERSION + 1);
    check.close();
  });

  it('refuses an SQLite file of another application, and adds nothing to it', () => {
    const other = join(dir, 'notes.db');
    const db = new Database(other);
    db.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')");
    db.close();
    expect(refusal(other)).toBeInstanceOf(SchemaMismatchError);
    const check = raw(other, true);
    expect(check.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all()).toEqual([{ name: 'notes' }]);
    expect(check.pragma('application_id', { simple: true })).toBe(0);
    expect(check.pragma('journal_mode', { simple: true })).toBe('delete');
    check.close();
  });

  it('refuses a file that is not SQLite at all, and leaves it as it was', () => {
    const other = join(dir, 'notes.txt');
    const text = 'not a database, '.repeat(100);
    writeFileSync(other, text);
    expect(refusal(other)).toBeInstanceOf(SchemaMismatchError);
    expect(refusal(other)).toMatchObject({
      code: 'event_log_schema_mismatch',
      message: expect.stringMatching(/not an assistant-relay event log/),
    });
    expect(readFileSync(other, 'utf8')).toBe(text);
  });
});

describe('one process at a time', () => {
  it('refuses a second opener while another process holds the log, naming it; others may read meanwhile; a SIGKILL frees it', async () => {
    const batch = 5;
    const child = AppendChild.start(path, batch);
    await child.until(batch);
    const refused = refusal();
    expect(refused).toBeInstanceOf(EventLogLockedError);
    expect(refused).toMatchObject({ code: 'event_log_locked', path, holder: { pid: child.pid, host: hostname() } });
    expect((refused as Error).message).toContain(`pid ${child.pid}`);
    expect(Date.parse((refused as EventLogLockedError).holder!.since)).toBeLessThanOrEqual(Date.now());

    // A reader (here, this process) still reads the live log, and the refused opener disturbed nothing.
    const seen = countEvents(path);
    expect(seen).toBeGreaterThanOrEqual(batch);
    await child.until(seen + 10 * batch);
    expect(countEvents(path)).toBeGreaterThan(seen);

    expect(await child.kill()).toEqual({ code: null, signal: 'SIGKILL' });
    const log = open();
    expect(log.count() % batch).toBe(0);
    await log.append(event(0));
  });

  it('refuses a second open in the same process, and opens again once the first is closed', async () => {
    const first = open();
    expect(refusal()).toMatchObject({ code: 'event_log_locked', holder: { pid: process.pid } });
    // Refusing must not release the first one's lock (POSIX locks are per process: closing any descriptor of the file would).
    expect(refusal()).toBeInstanceOf(EventLogLockedError);
    await first.append(event(0));
    await first.close();
    expect([...open().read()].map((s) => s.event)).toEqual([event(0)]);
  });
});

describe('file modes', () => {
  it('creates its folders 0700, and the log, its -wal, -shm and lock 0600, whatever the umask; folders that exist keep theirs', async () => {
    const existing = join(dir, 'shared');
    mkdirSync(existing);
    chmodSync(existing, 0o755);
    const file = join(existing, 'a', 'b', 'events.db');
    const umask = process.umask(0);
    try {
      await open(file).append(event(0));
    } finally {
      process.umask(umask);
    }
    expect([existing, join(existing, 'a'), join(existing, 'a', 'b')].map(modeOf)).toEqual([0o755, 0o700, 0o700]);
    for (const own of [file, `${file}-wal`, `${file}-shm`, `${file}.lock`]) expect(modeOf(own), own).toBe(0o600);
  });

  it('refuses a log or -wal that other users can access, saying what to run, and leaves them as they were', async () => {
    await open().append(event(0));
    await opened.pop()!.close();
    chmodSync(path, 0o644);
    const before = readFileSync(path);
    const refused = refusal();
    expect(refused).toBeInstanceOf(EventLogPermissionsError);
    expect(refused).toMatchObject({ code: 'event_log_permissions', message: expect.stringContaining(`${path} (mode 0644)`) });
    expect(modeOf(path)).toBe(0o644);
    expect(readFileSync(path)).toEqual(before);
    // The advice names every file that needs it, and only files that exist: pasted as it is, it is enough.
    const advised = (refused as Error).message.split('run chmod 600 ')[1]!.split(' ');
    expect(advised).toContain(path);
    for (const file of advised) chmodSync(file, 0o600);
    await open().append(event(1));
    await opened.pop()!.close();

    // A -wal left by a crash holds events not yet in the log file: it must be as private as the log.
    const child = AppendChild.start(path, 5);
    await child.until(5);
    await child.kill();
    const wal = readFileSync(`${path}-wal`);
    chmodSync(`${path}-wal`, 0o640);
    expect(refusal()).toMatchObject({
      code: 'event_log_permissions',
      message: expect.stringMatching(new RegExp(`run chmod 600 ${path}-wal$`)),
    });
    expect(readFileSync(`${path}-wal`)).toEqual(wal);
    chmodSync(`${path}-wal`, 0o600);
    expect(open().count()).toBeGreaterThanOrEqual(7);
  });
});

describe('append-only', () => {
  it('refuses UPDATE and DELETE on events, whoever connects', async () => {
    const log = open();
    await log.append(event(0));
    const db = raw();
    expect(() => db.prepare("UPDATE events SET type = 'forged'").run()).toThrow(/append-only/);
    expect(() => db.prepare('DELETE FROM events').run()).toThrow(/append-only/);
    db.close();
    expect([...log.read()].map((s) => s.event)).toEqual([event(0)]);
  });
});

describe('group commit', () => {
  it('commits every append of one event-loop turn in one batch, and resolves them together', async () => {
    const log = open(path, () => false);
    const batches: number[][] = [];
    log.onCommit((events) => batches.push(events.map((e) => e.n)));
    const appends = [0, 1, 2].map((n) => log.append(event(n)));
    // Microtasks run before the turn ends: these join the same batch.
    await Promise.resolve();
    appends.push(log.append(event(3)), log.append(event(4)));
    expect(log.pending).toBe(5);
    expect(countEvents(path)).toBe(0);

    let resolved = 0;
    for (const p of appends) void p.then(() => resolved++);
    await appends[0];
    expect(resolved).toBe(5);
    expect(batches).toEqual([[0, 1, 2, 3, 4]]);
    expect(countEvents(path)).toBe(5);
    expect(log.pending).toBe(0);

    // The next turn's appends are the next batch.
    await Promise.all([log.append(event(5)), log.append(event(6))]);
    expect(batches).toEqual([
      [0, 1, 2, 3, 4],
      [5, 6],
    ]);
  });

  it('commits a lone append on the next setImmediate, not later', async () => {
    const log = open(path, () => false);
    const appended = log.append(event(0));
    expect(countEvents(path)).toBe(0);
    // Queued after the log's own setImmediate, so it runs right after the commit.
    await nextTurn();
    expect(countEvents(path)).toBe(1);
    await appended;
  });

  it('commits an urgent append, with the batch so far, once the microtasks queued before it have run', async () => {
    const log = open(path, (e) => e.urgent === true);
    const batches: number[][] = [];
    log.onCommit((events) => batches.push(events.map((e) => e.n)));
    void log.append(event(0));
    const urgent = log.append({ ...event(1), urgent: true });
    // Appended in the same synchronous run: it still joins the urgent append's batch.
    void log.append(event(2));
    await Promise.resolve();
    expect(batches).toEqual([[0, 1, 2]]);
    expect(countEvents(path)).toBe(3);
    // A later non-urgent append of the same turn waits for the turn's end.
    const later = log.append(event(3));
    await Promise.resolve();
    expect(log.pending).toBe(1);
    await Promise.all([urgent, later]);
    expect(batches).toEqual([[0, 1, 2], [3]]);
  });

  it(`commits early at most ${EARLY_COMMITS_PER_TURN} times a turn; later urgent appends of the turn share its last batch`, async () => {
    const log = open();
    const batches: number[][] = [];
    log.onCommit((events) => batches.push(events.map((e) => e.n)));
    const appends: Array<Promise<void>> = [];
    // One urgent append per microtask, as separate requests of one busy turn would make them.
    for (let n = 0; n < EARLY_COMMITS_PER_TURN + 4; n++) {
      appends.push(log.append(event(n)));
      await Promise.resolve();
    }
    expect(batches.length).toBe(EARLY_COMMITS_PER_TURN);
    await Promise.all(appends);
    expect(batches).toEqual([
      ...Array.from({ length: EARLY_COMMITS_PER_TURN }, (_, n) => [n]),
      [0, 1, 2, 3].map((i) => EARLY_COMMITS_PER_TURN + i),
    ]);
    // The next turn may commit early again.
    await nextTurn();
    void log.append(event(6));
    await Promise.resolve();
    expect(batches.at(-1)).toEqual([6]);
  });

  it('runs onCommit listeners, in registration order, before the append promise resolves', async () => {
    const log = open();
    const order: string[] = [];
    log.onCommit((events) => order.push(`first:${events.length}:${countEvents(path)}`));
    log.onCommit((events) => order.push(`second:${events.length}`));
    const appended = log.append(event(0)).then(() => order.push('resolved'));
    await Promise.all([appended, log.append(event(1))]);
    // The listener already sees the batch durable.
    expect(order).toEqual(['first:2:2', 'second:2', 'resolved']);
  });

  it('rolls back a batch that fails to commit, rejects its appends, and refuses later ones', async () => {
    const log = open();
    await log.append(event(0));
    const batches: number[] = [];
    log.onCommit((events) => batches.push(events.length));
    // A BigInt has no JSON form: the second insert of the batch throws.
    const results = await Promise.allSettled([log.append(event(1)), log.append({ ...event(2), big: 1n }), log.append(event(3))]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'event_log_write_failed' });
    expect(batches).toEqual([]);
    expect(countEvents(path)).toBe(1);
    await expect(log.append(event(4))).rejects.toThrow(/BigInt/);
  });
});

describe('reading and closing', () => {
  it('reads every event back in append order, with increasing positions, across batches', async () => {
    const log = open();
    for (let batch = 0; batch < 4; batch++) await Promise.all([0, 1, 2].map((i) => log.append(event(batch * 3 + i))));
    const stored = [...log.read()];
    expect(stored.map((s) => s.event)).toEqual(Array.from({ length: 12 }, (_, n) => event(n)));
    expect(stored.map((s) => s.position)).toEqual([...stored.map((s) => s.position)].sort((a, b) => a - b));
    expect(new Set(stored.map((s) => s.position)).size).toBe(12);
    expect(log.count()).toBe(12);
  });

  it('files each event under the stream its streamOf names, with its type and time as columns', async () => {
    const log = open();
    await Promise.all([0, 1, 2, 3].map((n) => log.append(event(n))));
    const db = raw(path, true);
    try {
      expect(db.prepare('SELECT stream, type, at FROM events ORDER BY position').all()).toEqual(
        [0, 1, 2, 3].map((n) => ({ stream: `s${n % 3}`, type: 'test.appended', at: event(n).at })),
      );
    } finally {
      db.close();
    }
  });

  it("reads one stream's committed events in order, through the stream index and its tail", async () => {
    const log = open();
    await Promise.all([0, 1, 2, 3, 4, 5, 6].map((n) => log.append(event(n))));
    void log.append(event(9));
    expect([...log.readStream('s0')].map((s) => s.event.n)).toEqual([0, 3, 6]);
    expect([...log.readStream('nobody')]).toEqual([]);
    expect(log.lastPositionOf('s1')).toBe(5);
    const db = raw(path, true);
    try {
      const plan = db
        .prepare(
          "EXPLAIN QUERY PLAN SELECT e.position, e.data FROM stream_positions s JOIN events e ON e.position = s.position WHERE s.stream = 's0' ORDER BY s.position",
        )
        .all() as { detail: string }[];
      expect(plan.map((row) => row.detail).join(' ')).not.toMatch(/SCAN (events|s)\b/);
    } finally {
      db.close();
    }
    await log.settled();
  });

  it('indexes streams a few thousand events behind the log, so that a commit writes no index page, and catches up before a stream is read', async () => {
    const log = open();
    const indexed = () => {
      const db = raw(path, true);
      try {
        return [
          db.prepare('SELECT position FROM stream_positions_to').pluck().get(),
          db.prepare('SELECT count(*) FROM stream_positions').pluck().get(),
        ];
      } finally {
        db.close();
      }
    };
    await Promise.all(Array.from({ length: STREAM_INDEX_LAG - 1 }, (_, n) => log.append(event(n))));
    expect(indexed()).toEqual([0, 0]);
    await log.append(event(STREAM_INDEX_LAG - 1));
    expect(indexed()).toEqual([STREAM_INDEX_LAG, STREAM_INDEX_LAG]);
    await log.append(event(STREAM_INDEX_LAG));
    expect(indexed()).toEqual([STREAM_INDEX_LAG, STREAM_INDEX_LAG]);
    expect([...log.readStream('s1')].at(-1)!.event.n).toBe(STREAM_INDEX_LAG);
    expect(indexed()).toEqual([STREAM_INDEX_LAG + 1, STREAM_INDEX_LAG + 1]);
  });

  it('gives a log made before the stream index its index when it opens, and drops the index on every commit it had', async () => {
    const log = open();
    await Promise.all(Array.from({ length: 10 }, (_, n) => log.append(event(n))));
    await log.close();
    const db = raw(path, false);
    db.exec('DROP TABLE stream_positions; DROP TABLE stream_positions_to; CREATE INDEX events_by_stream ON events (stream, position)');
    db.close();
    const again = open();
    expect([...again.readStream('s2')].map((s) => s.event.n)).toEqual([2, 5, 8]);
    await again.close();
    const after = raw(path, true);
    try {
      expect(after.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND name = 'events_by_stream'").all()).toEqual([]);
    } finally {
      after.close();
    }
  });

  it('commits what is pending on close, then refuses appends; closing twice is harmless', async () => {
    const log = open();
    const appended = log.append(event(0));
    await log.close();
    await appended;
    await log.close();
    await expect(log.append(event(1))).rejects.toMatchObject({ code: 'event_log_closed', message: expect.stringMatching(/closed/) });
    expect(countEvents(path)).toBe(1);
  });
});

describe('durability', () => {
  it('keeps every awaited append, whole batches only, when the appending process is SIGKILLed', async () => {
    const batch = 7;
    const child = AppendChild.start(path, batch);
    const confirmed = await child.until(50 * batch);
    expect(await child.kill()).toEqual({ code: null, signal: 'SIGKILL' });

    const stored = [...open().read()].map((s) => s.event.n);
    expect(stored.length).toBeGreaterThanOrEqual(confirmed);
    expect(stored.length % batch).toBe(0);
    expect(stored).toEqual(Array.from({ length: stored.length }, (_, n) => n));
  });
});
