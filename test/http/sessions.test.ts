/** `GET /v1/sessions/:session_id`: the host's view of one session (our inspection route). */
import { afterEach, describe, expect, it } from 'vitest';
import { HTTP_ERRORS } from '../../protocol/index.js';
import { SimulatedClock } from '../support/clock.js';
import { request } from '../support/http.js';
import { Relay, TOKEN, idOf, stopAll, until } from './fixture.js';

afterEach(stopAll);

const SLEEPING = { sleep: 60_000 };

function view(relay: Relay, sessionId: string) {
  return request(`${relay.url}/v1/sessions/${encodeURIComponent(sessionId)}`, { token: TOKEN });
}

describe('GET /v1/sessions/:session_id', () => {
  it('returns the session view: state, backlog, pending tasks, evictions and live readers', async () => {
    const clock = new SimulatedClock();
    const relay = await Relay.start({ limits: { maxReplies: 2 }, clock });
    const session = 'insights:call/7';
    const stream = await relay.subscribe(session);
    const opened = clock.now();
    // A turn a second: the view's times are exactly the log's.
    for (const task of ['t1', 't2', 't3']) {
      await relay.turn(session, task, { message: `reply ${task}` });
      await relay.settled(task);
      clock.increment(1_000);
    }
    await relay.turn(session, 't4', SLEEPING);
    await stream.untilReplies(3);

    const response = await view(relay, session);
    expect(response.status).toBe(200);
    const body = response.body as Record<string, unknown>;
    const [, second, third] = stream.replies;
    expect(body).toEqual({
      session_id: session,
      form: 'A',
      state: 'open',
      callbacks: { queued: 0, succeeded: 0, abandoned: 0 },
      generation: expect.stringMatching(/^[0-9a-z]{1,32}$/),
      opened_at: opened,
      last_activity_at: opened + 3_000,
      ended_at: null,
      end_reason: null,
      pending_task_ids: ['t4'],
      last_event_id: idOf(relay, session, 3),
      backlog: [
        { id: idOf(relay, session, 2), task_id: 't2' },
        { id: idOf(relay, session, 3), task_id: 't3' },
      ],
      backlog_bytes: Buffer.byteLength(second!.data) + Buffer.byteLength(third!.data),
      evicted_task_ids: ['t1'],
      ledger_floor: 0,
      readers: 1,
      reader_states: [{ state: 'live.flowing', queued_bytes: 0, socket_buffered: 0 }],
    });

    clock.increment(1_000);
    await relay.t.host.endSession(session);
    await stream.untilEnded();
    await until(() => relay.readers(session) === 0, 'the reader gone');
    const ended = (await view(relay, session)).body;
    expect(ended).toMatchObject({
      state: 'ended',
      end_reason: 'host',
      ended_at: opened + 4_000,
      pending_task_ids: [],
      readers: 0,
      last_event_id: idOf(relay, session, 4),
    });
  });

  it('answers 404 session_not_found for a session the host never saw', async () => {
    const relay = await Relay.start();
    // A reader alone does not make a session: only a logged task does.
    await relay.subscribe('only-read');
    for (const session of ['unknown', 'only-read']) {
      const response = await view(relay, session);
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ error: { code: 'session_not_found', message: HTTP_ERRORS.session_not_found.message } });
    }
  });
});
