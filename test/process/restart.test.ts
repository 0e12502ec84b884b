/**
 * The restart guarantee, end to end: a `serve` child is SIGKILLed in the middle of a burst of turns, and
 * a new child on the same SQLite file must (a) give every resuming client exactly the terminal replies it
 * had not read, (b) settle what was pending as `interrupted`, and (c) fold to the state the first child
 * had. The kill lands at a different moment on every run, so each assertion compares against what the
 * log says happened rather than against a fixed script of outcomes; only what the test waited for before
 * the kill (or what cannot finish before it) is asserted as fixed.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { TaskSessionView as SessionView } from '../../engine/chat/view.js';
import { ServeChild, useChildFolder } from '../support/child.js';
import { post, request, script } from '../support/http.js';
import { readEvents } from '../support/log.js';
import { SseConnection, type SseFrame } from '../support/sse.js';

const TOKEN = 'restart-test-token';
const SESSIONS = ['r0', 'r1', 'r2', 'r3'] as const;
type Session = (typeof SESSIONS)[number];

interface Settled {
  readonly type: 'task.settled';
  readonly session_id: string;
  readonly task_id: string;
  readonly epoch: string;
  readonly seq: number;
  readonly data: string;
  readonly cause: string;
  readonly reply: { readonly status: string; readonly error_code?: string };
}

type LogEvent = ReturnType<typeof readEvents>[number];

const folder = useChildFolder();

async function views(url: string): Promise<Record<Session, SessionView>> {
  const entries = await Promise.all(
    SESSIONS.map(async (s) => {
      const response = await request(`${url}/v1/sessions/${s}`, { token: TOKEN });
      expect(response.status).toBe(200);
      return [s, response.body as SessionView] as const;
    }),
  );
  return Object.fromEntries(entries) as Record<Session, SessionView>;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const settledIn = (events: readonly LogEvent[], session: string): Settled[] =>
  events.filter((e): e is LogEvent & Settled => e.type === 'task.settled' && e.session_id === session);

const taskIdsStarted = (events: readonly LogEvent[], session: string): string[] =>
  events.filter((e) => e.type === 'task.started' && e.session_id === session).map((e) => e.task_id as string);

const seqOf = (id: string): number => Number(id.split(':')[2]);

/** Opens a resuming stream and returns what it replayed before its reconciliation frame, and that frame. */
async function resume(url: string, session: string, lastEventId: string): Promise<{ replay: SseFrame[]; resync: unknown }> {
  const stream = await SseConnection.open(`${url}/v1/events?session_id=${session}`, { token: TOKEN, lastEventId });
  expect(stream.status).toBe(200);
  await stream.until((c) => c.frames.some((f) => f.event === 'resync'), 10_000, `resync on ${session}`);
  stream.close();
  const at = stream.frames.findIndex((f) => f.event === 'resync');
  return { replay: stream.frames.slice(0, at), resync: JSON.parse(stream.frames[at]!.data) };
}

it('after a SIGKILL mid-burst, a restart resumes every client exactly, settles pending tasks interrupted, and folds to the same state', async () => {
  const db = join(folder(), 'relay.db');
  const args = ['--port', '0', '--db', db, '--token', TOKEN, '--agent', 'script'];
  const first = await ServeChild.start(args);
  const url = first.url;
  const oldEpoch = ((await request(`${url}/healthz`)).body as { epoch: string }).epoch;
  const streams = Object.fromEntries(
    await Promise.all(
      SESSIONS.map(async (s) => [s, await SseConnection.open(`${url}/v1/events?session_id=${s}`, { token: TOKEN })] as const),
    ),
  ) as Record<Session, SseConnection>;
  const accept = async (session: Session, task: string, text: string) => {
    const response = await post(url, TOKEN, { session_id: session, task_id: task, text });
    expect(response.status, `${session}/${task}`).toBe(202);
  };

  // r0 overflows its 1 MiB retention first (7 replies of ~200 KB keep 5), so the resumes below cross an eviction.
  for (let i = 0; i < 7; i++) await accept('r0', `r0-big${i}`, script({ message_bytes: 200_000 }));
  await streams.r0.untilReplies(7);

  // The burst: answers at once, answers after sleeps that the kill may or may not interrupt, and one task
  // per session that sleeps far past the kill, so it is surely pending then.
  const immediate = (s: Session) => [`${s}-echo0`, `${s}-echo1`, `${s}-done`, `${s}-quiet`, `${s}-fail`];
  const turns = (s: Session): Array<[string, string]> => [
    [`${s}-echo0`, 'hello'],
    [`${s}-echo1`, 'again'],
    [`${s}-done`, script({ tool_call: 'lookup' }, { completed: true })],
    [`${s}-quiet`, script({ silent: true })],
    [`${s}-fail`, script({ errored: { code: 'boom', message: 'scripted failure' } })],
    ...[0, 1, 2, 3, 4, 5].map((i): [string, string] => [
      `${s}-late${i}`,
      script({ typing: 'busy' }, { sleep: 20 + 60 * i }, { message: `late ${i}` }),
    ]),
    [`${s}-long`, script({ typing: 'waiting' }, { sleep: 60_000 }, { message: 'never' })],
  ];
  await Promise.all(SESSIONS.flatMap((s) => turns(s).map(([task, text]) => accept(s, task, text))));
  for (const s of SESSIONS) {
    await streams[s].until(
      (c) => immediate(s).every((t) => c.replies.some((r) => r.json.task_id === t)),
      10_000,
      `immediate replies on ${s}`,
    );
  }
  // r1's client goes away; a reply it surely has not read is then committed.
  streams.r1.close();
  await accept('r1', 'r1-unread', 'while you were away');
  await until('r1-unread to settle', async () => {
    const view = (await request(`${url}/v1/sessions/r1`, { token: TOKEN })).body as SessionView;
    return view.backlog.some((r) => r.task_id === 'r1-unread');
  });

  const before = await views(url);
  expect(before.r0.evicted_task_ids).toEqual(['r0-big0', 'r0-big1']);
  for (const s of SESSIONS) expect(before[s].pending_task_ids).toContain(`${s}-long`);

  // More turns in flight, and the kill as soon as the first of them is acknowledged.
  const burst = SESSIONS.flatMap((s) =>
    [0, 1, 2].map((i) => {
      const task = `${s}-burst${i}`;
      const text = i === 1 ? 'plain' : script({ sleep: 10 * i }, { message: `burst ${i}` });
      return {
        task,
        status: post(url, TOKEN, { session_id: s, task_id: task, text }).then(
          (r) => r.status,
          () => 'failed' as const,
        ),
      };
    }),
  );
  await Promise.race(burst.map((b) => b.status));
  expect(await first.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
  const acknowledged = new Set<string>();
  for (const b of burst) {
    const status = await b.status;
    expect([202, 'failed'], b.task).toContain(status);
    if (status === 202) acknowledged.add(b.task);
  }
  expect(acknowledged.size).toBeGreaterThan(0);
  await Promise.all(SESSIONS.map((s) => streams[s].untilEnded(5_000)));
  const read = Object.fromEntries(SESSIONS.map((s) => [s, streams[s].replies])) as Record<Session, SseConnection['replies']>;

  const second = await ServeChild.start(args);
  const epoch = ((await request(`${second.url}/healthz`)).body as { epoch: string }).epoch;
  expect(epoch).not.toBe(oldEpoch);
  const log = readEvents(db);
  const restartAt = log.findIndex((e) => e.type === 'host.started' && e.epoch === epoch);
  expect(restartAt).toBeGreaterThan(0);
  const atKill = log.slice(0, restartAt);
  const sinceRestart = log.slice(restartAt + 1);
  const after = await views(second.url);

  for (const s of SESSIONS) {
    const label = `session ${s}`;
    const settled = settledIn(log, s);
    const settledAtKill = settledIn(atKill, s);
    const generation = atKill.find((e) => e.type === 'session.opened' && e.session_id === s)!.generation as string;
    const idOf = (e: Settled) => `${e.epoch}:${generation}:${e.seq}`;

    // Acknowledged means durable: every 202 before the kill is in the log.
    const started = taskIdsStarted(atKill, s);
    for (const [task] of turns(s)) expect(started, label).toContain(task);
    for (const task of acknowledged) if (task.startsWith(`${s}-`)) expect(started, label).toContain(task);

    // (b) Exactly the tasks the log left pending are settled, once each, `interrupted`, in the new epoch.
    const pendingAtKill = started.filter((t) => !settledAtKill.some((e) => e.task_id === t));
    expect(pendingAtKill, label).toContain(`${s}-long`);
    const interrupted = settledIn(sinceRestart, s);
    expect(
      interrupted.map((e) => e.task_id),
      label,
    ).toEqual(pendingAtKill);
    for (const e of interrupted) {
      expect(e, label).toMatchObject({ epoch, cause: 'interrupted', reply: { status: 'errored', error_code: 'interrupted' } });
    }
    // One terminal reply per task, seqs 1..n with no gap across both epochs.
    expect(new Set(settled.map((e) => e.task_id)).size, label).toBe(settled.length);
    expect(
      settled.map((e) => e.seq),
      label,
    ).toEqual(settled.map((_, i) => i + 1));

    // Nothing was sent that the log lacks: every reply read before the kill is in it, byte for byte.
    for (const frame of read[s]) {
      expect(settledAtKill.find((e) => idOf(e) === frame.id)?.data, `${label} ${frame.id}`).toBe(frame.data);
    }

    // (c) The fold after restart is the state before the kill plus what settled since the snapshot.
    const [was, is] = [before[s], after[s]];
    expect(is, label).toMatchObject({
      session_id: s,
      state: 'open',
      generation: was.generation,
      opened_at: was.opened_at,
      pending_task_ids: [],
      evicted_task_ids: was.evicted_task_ids,
      ledger_floor: was.ledger_floor,
    });
    expect(is.backlog.slice(0, was.backlog.length), label).toEqual(was.backlog);
    const since = new Set([...was.pending_task_ids, ...burst.map((b) => b.task)]);
    for (const r of is.backlog.slice(was.backlog.length)) expect(since.has(r.task_id), `${label} ${r.task_id}`).toBe(true);
    // And it is what the log says: the settled replies minus the evicted ones, newest last.
    const evicted = new Set(is.evicted_task_ids);
    expect(is.backlog, label).toEqual(settled.filter((e) => !evicted.has(e.task_id)).map((e) => ({ id: idOf(e), task_id: e.task_id })));
    expect(is.last_event_id, label).toBe(is.backlog.at(-1)!.id);

    // (a) Resuming from the last id read (an old-epoch id) replays exactly the rest, then a clean resync.
    const cursor = read[s].at(-1)!.id!;
    const { replay, resync } = await resume(second.url, s, cursor);
    const rest = settled.filter((e) => e.seq > seqOf(cursor));
    expect(replay, label).toEqual(rest.map((e) => ({ id: idOf(e), data: e.data })));
    expect(resync, label).toEqual({ type: 'resync', session_id: s, missed_task_ids: [], recovery_complete: true });
    // What the client read plus the replay is every terminal reply, in order, each once.
    expect([...read[s].map((f) => f.id), ...replay.map((f) => f.id)], label).toEqual(settled.map(idOf));
    expect(
      replay.map((f) => JSON.parse(f.data).task_id),
      label,
    ).toContain(`${s}-long`);
  }
  expect(sinceRestart.every((e) => e.type === 'task.settled')).toBe(true);
  // r1 had left before `r1-unread` settled: it arrives from the old epoch's backlog.
  expect(read.r1.some((f) => JSON.parse(f.data).task_id === 'r1-unread')).toBe(false);

  // Older old-epoch cursors resume exactly too, across r0's eviction: the ledger names what is gone.
  const r2 = settledIn(log, 'r2');
  const fromFirst = await resume(second.url, 'r2', read.r2[0]!.id!);
  expect(fromFirst.replay.map((f) => f.id)).toEqual(after.r2.backlog.filter((r) => seqOf(r.id) > 1).map((r) => r.id));
  expect(fromFirst.replay).toHaveLength(r2.length - 1);
  expect(fromFirst.resync).toMatchObject({ missed_task_ids: [], recovery_complete: true });
  const r0 = await resume(second.url, 'r0', read.r0[0]!.id!);
  expect(r0.replay.map((f) => f.id)).toEqual(after.r0.backlog.map((r) => r.id));
  expect(r0.resync).toEqual({ type: 'resync', session_id: 'r0', missed_task_ids: ['r0-big1'], recovery_complete: true });

  // Folding is deterministic: a clean restart on the same file shows the same sessions, and appends only its start.
  expect(await second.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  const third = await ServeChild.start(args);
  const again = await views(third.url);
  for (const s of SESSIONS) expect({ ...again[s], readers: 0, reader_states: [] }).toEqual({ ...after[s], readers: 0, reader_states: [] });
  const finalLog = readEvents(db);
  expect(finalLog.slice(0, log.length)).toEqual(log);
  expect(finalLog.slice(log.length).map((e) => e.type)).toEqual(['host.started']);
  expect(await third.stop('SIGTERM')).toEqual({ code: 0, signal: null });
});
