/** Reading a log from outside the process that writes it: its bounds, its kind, and one consistent view while another process appends. */
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SchemaMismatchError } from '../../storage/errors.js';
import { EventLog, type LogRecord } from '../../storage/event-log.js';
import { STREAM_INDEX_LAG } from '../../storage/stream-index.js';
import { CorruptEventError, LogOpenError, LogReader, type LogView, type ReadBounds } from '../../storage/log-reader.js';
import { AppendChild, useChildFolder } from '../support/child.js';

const folder = useChildFolder();

interface Noted extends LogRecord {
  readonly stream: string;
}

async function logOf(events: readonly Noted[]): Promise<string> {
  const path = join(folder(), `${randomUUID()}.db`);
  const log = EventLog.open<Noted>({ path, streamOf: (event) => event.stream });
  await Promise.all(events.map((event) => log.append(event)));
  await log.close();
  return path;
}

// The clock went back at #4 (a restart on another machine, say).
const EVENTS: Noted[] = [
  { type: 'host.started', stream: '', at: 10 },
  { type: 'session.opened', stream: 'a', at: 20 },
  { type: 'session.opened', stream: 'b', at: 30 },
  { type: 'task.started', stream: 'a', at: 25 },
  { type: 'host.started', stream: '', at: 40 },
];

async function read<T>(path: string, bounds: ReadBounds, what: (view: LogView) => T): Promise<T> {
  const reader = LogReader.open(path);
  try {
    return await reader.read(bounds, what);
  } finally {
    reader.close();
  }
}

describe('log reader', () => {
  it('reads the events in position order within its bounds, and says whose log it is', async () => {
    const path = await logOf(EVENTS);
    const positions = (bounds: ReadBounds) =>
      read(path, bounds, (view) => [view.count, view.end, [...view.events()].map((e) => e.position)]);
    expect(await positions({})).toEqual([5, 5, [1, 2, 3, 4, 5]]);
    expect(await positions({ untilPosition: 3 })).toEqual([3, 3, [1, 2, 3]]);
    expect(await positions({ untilPosition: 99 })).toEqual([5, 5, [1, 2, 3, 4, 5]]);
    // `untilAt` stops before the first event later than it, even if a later one is earlier again.
    expect(await positions({ untilAt: 25 })).toEqual([2, 2, [1, 2]]);
    expect(await positions({ untilAt: 9 })).toEqual([0, 0, []]);
    expect(await positions({ afterPosition: 2, untilPosition: 4 })).toEqual([2, 4, [3, 4]]);
    expect(await read(path, {}, (view) => view.kind)).toBe('host');
  });

  it('reads one stream, lists the streams in the order they began, and finds the last event of a type at or before the end', async () => {
    const path = await logOf(EVENTS);
    expect(await read(path, {}, (view) => [...view.events('a')].map((e) => e.position))).toEqual([2, 4]);
    expect(await read(path, {}, (view) => [...view.streams()])).toEqual(['', 'a', 'b']);
    expect(await read(path, { untilPosition: 2 }, (view) => [...view.streams()])).toEqual(['', 'a']);
    expect(await read(path, {}, (view) => view.last('host.started')?.position)).toBe(5);
    expect(await read(path, { afterPosition: 2, untilPosition: 4 }, (view) => view.last('host.started')?.position)).toBe(1);
    expect(await read(path, {}, (view) => view.last('session.ended'))).toBeUndefined();
  });

  it('reads a stream from the stream index and from the tail the index has not reached, in pages, within the bounds', async () => {
    // Past the lag, so that the index holds the first events and a tail follows it.
    const events: Noted[] = Array.from({ length: STREAM_INDEX_LAG + 2_500 }, (_, n) => ({
      type: 'test.appended',
      stream: `s${n % 3}`,
      at: n,
    }));
    const path = await logOf(events);
    const positionsOf = (stream: string, after: number, until: number) =>
      events.flatMap((event, i) => (event.stream === stream && i + 1 > after && i + 1 <= until ? [i + 1] : []));
    const end = events.length;
    expect(await read(path, {}, (view) => [...view.events('s1')].map((e) => e.position))).toEqual(positionsOf('s1', 0, end));
    expect(
      await read(path, { afterPosition: 4_000, untilPosition: 5_000 }, (view) => [...view.events('s2')].map((e) => e.position)),
    ).toEqual(positionsOf('s2', 4_000, 5_000));
  });

  it('knows a backend log, a plugin log, an empty log and one it cannot name by their first event', async () => {
    const kind = async (type: string | undefined) =>
      read(await logOf(type === undefined ? [] : [{ type, stream: '', at: 1 }]), {}, (view) => view.kind);
    expect(await kind('backend.started')).toBe('backend');
    expect(await kind('plugin.job_received')).toBe('plugin');
    expect(await kind(undefined)).toBeUndefined();
    expect(await kind('test.appended')).toBe('unknown');
  });

  it('refuses a file that is missing or not a log of ours, and names an event whose data is not the event its row says', async () => {
    const dir = folder();
    expect(() => LogReader.open(join(dir, 'missing.db'))).toThrow(LogOpenError);
    expect(() => LogReader.open(dir)).toThrow(LogOpenError);
    const other = new Database(join(dir, 'other.db'));
    other.exec('CREATE TABLE t (x)');
    other.close();
    expect(() => LogReader.open(join(dir, 'other.db'))).toThrow(SchemaMismatchError);
    const path = await logOf(EVENTS);
    const conn = new Database(path);
    conn.exec('DROP TRIGGER events_append_only_update');
    conn.prepare('UPDATE events SET data = ? WHERE position = 2').run('{"type":"session.opened"');
    conn.prepare('UPDATE events SET data = ? WHERE position = 3').run(JSON.stringify({ type: 'session.ended', stream: 'b', at: 30 }));
    conn.close();
    await expect(read(path, { untilPosition: 2 }, (view) => [...view.events()])).rejects.toThrow(CorruptEventError);
    await expect(read(path, { untilPosition: 2 }, (view) => [...view.events()])).rejects.toThrow(
      /^event #2 \(session\.opened\) is not JSON/,
    );
    await expect(read(path, { afterPosition: 2 }, (view) => [...view.events()])).rejects.toThrow(
      'event #3 (session.opened) holds data that is not that event',
    );
  });

  it('holds one view for its whole read while another process goes on appending, and never holds that process up', async () => {
    const path = join(folder(), 'appended.db');
    const child = AppendChild.start(path, 10);
    await child.until(100);
    try {
      const seen = await read(path, {}, async (view) => {
        // The child counts what it has committed: this read stays open while it commits more.
        expect(await child.until(view.count + 100)).toBeGreaterThanOrEqual(view.count + 100);
        expect([...view.events()]).toHaveLength(view.count);
        expect(view.last('test.appended')?.position).toBe(view.count);
        return view.count;
      });
      expect(await read(path, {}, (view) => view.count)).toBeGreaterThanOrEqual(seen + 100);
    } finally {
      await child.kill();
    }
  });
});
