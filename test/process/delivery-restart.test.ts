/**
 * Durable callback delivery across a crash (4.3): a Form B `serve` child is SIGKILLed while its outbox
 * holds undelivered messages (the head in flight); a new child on the same SQLite file delivers every
 * one of them. The receiver sees every message_id at least once and, after dedupe by message_id,
 * exactly once, in the order they were queued.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { Receiver, closeReceivers } from '../support/receiver.js';
import { ServeChild, useChildFolder } from '../support/child.js';
import { post, script } from '../support/http.js';
import { readEvents } from '../support/log.js';

const TOKEN = 'delivery-restart-token';
const folder = useChildFolder();
afterEach(closeReceivers);

async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

it('a SIGKILL with deliveries pending loses none: each is delivered after the restart, in order', { timeout: 60_000 }, async () => {
  let answering = false;
  // Until the crash the receiver takes requests and never answers: the outbox's head is in flight.
  const receiver = await Receiver.start((_received, response) => {
    if (answering) response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  const db = join(folder(), 'relay.db');
  const args = ['--port', '0', '--db', db, '--token', TOKEN, '--agent', 'script', '--form', 'B', '--log-level', 'silent'];
  const first = await ServeChild.start(args);
  const callback = { url: `${receiver.url}/cb`, token: 'cb-token' };
  for (let i = 1; i <= 4; i++) {
    const response = await post(first.url, TOKEN, {
      session_id: 'conv',
      task_id: randomUUID(),
      text: script({ message: `${i}a` }, { message: `${i}b` }),
      callback,
    });
    expect(response.status).toBe(202);
  }
  await until(() => receiver.requests.length >= 1, 'the first attempt to arrive');
  await until(() => readEvents(db).filter((e) => e.type === 'reply.queued').length === 8, 'all eight messages queued');
  await first.stop('SIGKILL');

  const queued = readEvents(db)
    .filter((e) => e.type === 'reply.queued')
    .map((e) => e as unknown as { delivery: { n: number }; reply: { message_id: string } })
    .sort((a, b) => a.delivery.n - b.delivery.n)
    .map((e) => e.reply.message_id);
  expect(readEvents(db).filter((e) => e.type === 'delivery.succeeded')).toEqual([]);

  answering = true;
  const second = await ServeChild.start(args);
  const ids = () => receiver.requests.map((r) => (JSON.parse(r.body) as { message_id: string }).message_id);
  await until(() => new Set(ids()).size === 8, 'every message delivered');
  // The receiver sees the last POST before the child has its answer: a close in between aborts that
  // attempt unlogged (the next start would make it again), so the stop waits for the log to say so.
  await until(() => readEvents(db).filter((e) => e.type === 'delivery.succeeded').length === 8, 'every delivery logged');
  await second.stop('SIGTERM');

  const seen = ids();
  for (const id of queued) expect(seen).toContain(id);
  expect([...new Set(seen)]).toEqual(queued);
  const log = readEvents(db);
  expect(log.filter((e) => e.type === 'delivery.interrupted')).toHaveLength(1);
  expect(log.filter((e) => e.type === 'delivery.succeeded')).toHaveLength(8);
  expect(log.filter((e) => e.type === 'delivery.abandoned')).toEqual([]);
});
