/**
 * A reader that connects while a reply is appended but not yet committed (4.2 rules 2, 7): its replay is
 * taken from committed state in the same step that registers it, so that reply reaches it exactly once,
 * as a live frame once committed, never from the replay and then again live.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChatEngine } from '../../engine/chat/engine.js';
import type { TaskSessionView } from '../../engine/chat/view.js';
import { isUrgent, streamOf, type DomainEvent } from '../../machines/chat/events.js';
import type { SessionLimits } from '../../machines/chat/task-session.js';
import { parseEventId } from '../../protocol/index.js';
import { EventLog } from '../../storage/event-log.js';
import { SimulatedClock } from '../support/clock.js';
import { tempDir } from '../support/host.js';
import { FakeSocket } from '../support/socket.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function engine(limits: Partial<SessionLimits> = {}): Promise<ChatEngine> {
  const dir = tempDir();
  const log = EventLog.open<DomainEvent>({ path: join(dir, 'relay.db'), streamOf, urgent: isUrgent });
  const started = await ChatEngine.start(log, {
    // The test answers for the agent.
    agent: { name: 'silent', respond: () => new Promise(() => {}) },
    transport: { post: async () => ({ kind: 'aborted' }) },
    clock: new SimulatedClock(),
    limits,
  });
  cleanups.push(async () => {
    await started.close();
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return started;
}

const message = (task_id: string, reply_text: string) => ({
  session_id: 's',
  task_id,
  status: 'message' as const,
  message_id: `m-${task_id}`,
  reply_text,
});
const ids = (socket: FakeSocket) => socket.written.join('').match(/^id: .*$/gm) ?? [];

describe('a reader registered while a reply is uncommitted', () => {
  it('gets that reply once, live, and everything committed before it from the replay', async () => {
    const e = await engine();
    for (const task_id of ['t1', 't2', 't3']) await e.incoming({ session_id: 's', task_id, text: 'q' });
    await e.run({ type: 'reply', session_id: 's', task_id: 't1', reply: message('t1', 'one'), epoch: e.epoch, at: 1 });
    await e.run({ type: 'reply', session_id: 's', task_id: 't2', reply: message('t2', 'two'), epoch: e.epoch, at: 2 });
    const { generation } = e.session('s') as TaskSessionView;
    const id = (seq: number) => `${e.epoch}:${generation}:${seq}`;

    // t3's reply is folded and in the log's batch, not committed, when the reader connects.
    const committed = e.run({ type: 'reply', session_id: 's', task_id: 't3', reply: message('t3', 'three'), epoch: e.epoch, at: 3 });
    const socket = new FakeSocket();
    const result = e.subscribe('s', parseEventId(id(1)), () => socket);
    // Registered in this very step: nothing can commit between the replay and the registration.
    expect(result.kind).toBe('subscribed');
    expect(ids(socket)).toEqual([`id: ${id(2)}`]);

    await committed;
    expect(ids(socket)).toEqual([`id: ${id(2)}`, `id: ${id(3)}`]);
  });

  it('gets the committed reply that an uncommitted one has evicted from memory, not a report of it as missed', async () => {
    const e = await engine({ maxReplies: 1 });
    for (const task_id of ['t1', 't2', 't3']) await e.incoming({ session_id: 's', task_id, text: 'q' });
    await e.run({ type: 'reply', session_id: 's', task_id: 't1', reply: message('t1', 'one'), epoch: e.epoch, at: 1 });
    await e.run({ type: 'reply', session_id: 's', task_id: 't2', reply: message('t2', 'two'), epoch: e.epoch, at: 2 });
    const { generation } = e.session('s') as TaskSessionView;
    const id = (seq: number) => `${e.epoch}:${generation}:${seq}`;
    // Committed, the backlog holds t2; in memory t3's reply, still in the batch, has evicted it.
    const committed = e.run({ type: 'reply', session_id: 's', task_id: 't3', reply: message('t3', 'three'), epoch: e.epoch, at: 3 });
    const socket = new FakeSocket();
    e.subscribe('s', parseEventId(id(1)), () => socket);
    const written = () => socket.written.join('');
    expect(ids(socket)).toEqual([`id: ${id(2)}`]);
    expect(written()).toContain('"missed_task_ids":[],"recovery_complete":true');
    await committed;
    expect(ids(socket)).toEqual([`id: ${id(2)}`, `id: ${id(3)}`]);
  });

  it('an end not yet committed is not an end yet: the reader is closed when it commits, after what preceded it', async () => {
    const e = await engine();
    await e.incoming({ session_id: 's', task_id: 't1', text: 'q' });
    const ended = e.endSession('s');
    const socket = new FakeSocket();
    expect(e.subscribe('s', undefined, () => socket).kind).toBe('subscribed');
    expect(socket.ended).toBe(false);
    expect(await ended).toBe(true);
    // t1 settled session_ended in the same batch as the end: its frame went out, then the stream ended.
    expect(socket.written.join('')).toContain('"error_code":"session_ended"');
    expect(socket.ended).toBe(true);
  });
});
