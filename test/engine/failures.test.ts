/** Failures nobody awaits are reported, never swallowed, and never stop a session's processing. */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FailureContext } from '../../engine/core/failures.js';
import { ChatEngine } from '../../engine/chat/engine.js';
import { isUrgent, streamOf, type DomainEvent } from '../../machines/chat/events.js';
import { EventLog } from '../../storage/event-log.js';
import { SimulatedClock } from '../support/clock.js';
import { startHost, tempDir } from '../support/host.js';
import { post } from '../support/http.js';
import { FakeSocket } from '../support/socket.js';
import { waitFor } from '../support/wait.js';
import { captureWarnings } from '../support/warnings.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('failures in after-commit actions', () => {
  it('a throwing onEvent listener is reported with the event, and the session goes on', async () => {
    const dir = tempDir();
    const log = EventLog.open<DomainEvent>({ path: join(dir, 'relay.db'), streamOf, urgent: isUrgent });
    const reported: Array<[string, FailureContext]> = [];
    const engine = await ChatEngine.start(log, {
      agent: { name: 'echo', respond: async (turn, reply) => reply.message(turn.text) },
      transport: { post: async () => ({ kind: 'aborted' }) },
      clock: new SimulatedClock(),
      onError: (error, context) => reported.push([(error as Error).message, context]),
    });
    cleanups.push(async () => {
      await engine.close();
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    });
    engine.subscribeEvents((event) => {
      if (event.type === 'task.started') throw new Error(`listener broke on ${event.task_id}`);
    });
    const socket = new FakeSocket();
    engine.subscribe('s', undefined, () => socket);
    for (const task_id of ['t1', 't2']) {
      await engine.incoming({ session_id: 's', task_id, text: `echo ${task_id}` });
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(reported.map(([message, { what, event }]) => [message, what, event?.type])).toEqual([
      ['listener broke on t1', 'onEvent listener', 'task.started'],
      ['listener broke on t2', 'onEvent listener', 'task.started'],
    ]);
    // The agent ran and both answers were framed: the failure stopped nothing else.
    expect(socket.written.join('').match(/"reply_text":"echo t\d"/g)).toEqual(['"reply_text":"echo t1"', '"reply_text":"echo t2"']);
  });
});

describe('an embedder without a logger', () => {
  it('still hears of a failure nobody awaits: it is a process warning', async () => {
    const t = await startHost({ agent: 'echo' });
    cleanups.push(() => t.cleanup());
    const warnings = captureWarnings();
    t.host.onEvent((event) => {
      if (event.type === 'task.settled') throw new Error('listener broke');
    });
    await post(t.url, 'test-token', { session_id: 's', task_id: 't1', text: 'hi' });
    await waitFor('a process warning', () => warnings.length > 0);
    expect(warnings).toEqual(['assistant-relay: onEvent listener failed: Error: listener broke']);
  });
});
