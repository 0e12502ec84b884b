/**
 * Property-based tests of callback delivery (issue 13): fast-check generates a Form B conversation (turns
 * the `script` agent answers with progress and messages) and how the client's callback answers each POST
 * in turn (2xx, a retryable 408, 429 or 5xx, no answer at all until the attempt times out, a connection
 * cut before any answer, a permanent redirect or 4xx, or "session ended"); the host runs on a simulated
 * clock that the test moves until every delivery has ended. What each delivery's attempts were answered
 * decides how it must end, and the log must say so:
 *
 * - every queued delivery ends exactly once: succeeded, abandoned or superseded;
 * - a delivered one's last answer was a 2xx (a "session ended" too: that reply arrived, the later ones
 *   are abandoned unsent); one whose answers were all retryable was abandoned after exactly 4 attempts;
 *   one answered permanently was abandoned then; every answer before a delivery's last was retryable;
 * - each attempt is logged before it is made: the callback got exactly as many POSTs as the log has attempts;
 * - each retried failure is logged with what happened: the status, `timeout`, or the connection's error.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../index.js';
import { SimulatedClock } from '../support/clock.js';
import { startHost, TOKEN } from '../support/host.js';
import { post, script } from '../support/http.js';
import { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 25);
const SEED = process.env.PROPERTY_SEED === undefined ? 43 : Number(process.env.PROPERTY_SEED);
const PATH = process.env.PROPERTY_PATH;
const SESSION = 's-callbacks';

/** `timeout`: the callback takes the POST and never answers; `cut`: it closes the connection without an answer. */
type Answer = 200 | 204 | 408 | 429 | 500 | 503 | 'timeout' | 'cut' | 301 | 404 | 410 | 'session_ended';
const ANSWERS: readonly Answer[] = [200, 204, 408, 429, 500, 503, 'timeout', 'cut', 301, 404, 410, 'session_ended'];
const retryable = (answer: Answer) =>
  answer === 408 || answer === 429 || answer === 500 || answer === 503 || answer === 'timeout' || answer === 'cut';
/** What the log says of a retried failure. */
const outcomeOf = (answer: Answer) =>
  answer === 'timeout' ? /^timeout$/ : answer === 'cut' ? /^[A-Z][A-Z_]+$/ : new RegExp(`^status ${String(answer)}$`);
/** "Session ended" comes with a 200: that reply was delivered; the ones after it are not sent. */
const delivered = (answer: Answer) => answer === 200 || answer === 204 || answer === 'session_ended';

const turn = fc.tuple(
  fc.array(fc.constantFrom({ typing: 'thinking' }, { tool_call: 'search' }), { maxLength: 2 }),
  fc.array(
    fc.string({ maxLength: 40 }).map((message) => ({ message })),
    { minLength: 1, maxLength: 2 },
  ),
);
const workloads = fc.record({
  turns: fc.array(turn, { minLength: 1, maxLength: 3 }),
  // The callback's answers to its POSTs in the order they come, then 200 for every later one.
  // Retryable answers weigh most, so that a delivery runs out of attempts now and then.
  answers: fc.array(
    fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(...ANSWERS.filter(retryable)) },
      { weight: 3, arbitrary: fc.constantFrom(...ANSWERS.filter((answer) => delivered(answer) && answer !== 'session_ended')) },
      { weight: 1, arbitrary: fc.constantFrom(...ANSWERS.filter((answer) => !retryable(answer) && !delivered(answer))) },
      { weight: 1, arbitrary: fc.constant<Answer>('session_ended') },
    ),
    { minLength: 2, maxLength: 16, size: 'large' },
  ),
});

type Of<T extends DomainEvent['type']> = Extract<DomainEvent, { type: T }>;

async function run({
  turns,
  answers,
}: {
  turns: ReadonlyArray<readonly [readonly object[], readonly object[]]>;
  answers: readonly Answer[];
}): Promise<void> {
  let posts = 0;
  const receiver = await Receiver.start((_received, response) => {
    const answer = answers[posts++] ?? 200;
    if (answer === 'timeout') return;
    if (answer === 'cut') return void response.socket?.destroy();
    if (answer === 'session_ended')
      return void response
        .writeHead(200, { 'content-type': 'application/json' })
        .end('{"ok":true,"ignored":true,"reason":"session_ended"}');
    response.writeHead(answer, answer === 301 ? { location: '/elsewhere' } : {}).end();
  });
  const clock = new SimulatedClock();
  const t = await startHost({ agent: 'script', form: 'B', clock, callbackLoopback: true });
  const events: DomainEvent[] = [];
  t.host.onEvent((event) => events.push(event));
  try {
    let accepted = 0;
    for (const [progress, messages] of turns) {
      const response = await post(t.url, TOKEN, {
        session_id: SESSION,
        task_id: randomUUID(),
        text: script(...progress, ...messages),
        callback: { url: `${receiver.url}/cb`, token: 'callback-token' },
      });
      // A session the client ended takes no more turns.
      expect([202, 200]).toContain(response.status);
      if (response.status !== 202) continue;
      accepted += 1;
      await waitFor('the turn to finish', () => events.filter((event) => event.type === 'turn.finished').length === accepted, {
        everyMs: 5,
      });
    }
    const queued = () =>
      events.filter((event): event is Of<'reply.queued'> => event.type === 'reply.queued').map((event) => event.delivery.n);
    const ended = () =>
      events.filter(
        (event) => event.type === 'delivery.succeeded' || event.type === 'delivery.abandoned' || event.type === 'delivery.superseded',
      );
    // Retries and an attempt's time limit wait on the host's clock: each poll that finds some still going moves it on a second.
    const allEnded = () => {
      if (ended().length >= queued().length) return true;
      clock.increment(1_000);
      return false;
    };
    await waitFor('every delivery to end', allEnded, { everyMs: 5 });

    // Every queued delivery ends exactly once.
    const endings = new Map<number, DomainEvent[]>();
    for (const event of ended())
      endings.set((event as Of<'delivery.succeeded'>).n, [...(endings.get((event as Of<'delivery.succeeded'>).n) ?? []), event]);
    expect([...endings.keys()].sort((a, b) => a - b)).toEqual(queued());
    for (const [n, each] of endings) expect(each, `delivery ${n}`).toHaveLength(1);

    // The callback got one POST per logged attempt, answered in the order the attempts were made.
    const attempts = events.filter((event): event is Of<'delivery.attempted'> => event.type === 'delivery.attempted');
    expect(posts).toBe(attempts.length);
    const answerOf = (index: number): Answer => answers[index] ?? 200;
    for (const n of queued()) {
      const mine = attempts.map((attempt, index) => ({ attempt, answer: answerOf(index) })).filter(({ attempt }) => attempt.n === n);
      const [ending] = endings.get(n)!;
      expect(mine.length, `delivery ${n}: at most 4 attempts`).toBeLessThanOrEqual(4);
      mine
        .slice(0, -1)
        .forEach(({ answer }) => expect(retryable(answer), `delivery ${n}: ${String(answer)} before its last attempt`).toBe(true));
      const failures = events.filter((event): event is Of<'delivery.failed'> => event.type === 'delivery.failed' && event.n === n);
      failures.forEach((failure) =>
        expect(failure.outcome, `delivery ${n}, attempt ${failure.attempt}`).toMatch(outcomeOf(mine[failure.attempt - 1]!.answer)),
      );
      const last = mine.at(-1)?.answer;
      if (last === undefined) {
        // Never attempted: progress replaced by a later reply, or the session ended before its turn.
        expect(['delivery.superseded', 'delivery.abandoned']).toContain(ending!.type);
      } else if (delivered(last)) {
        expect(ending!.type, `delivery ${n}`).toBe('delivery.succeeded');
      } else if (retryable(last)) {
        expect([ending!.type, mine.length], `delivery ${n}: all retryable`).toEqual(['delivery.abandoned', 4]);
      } else {
        expect(ending!.type, `delivery ${n}: ${String(last)}`).toBe('delivery.abandoned');
      }
    }
  } finally {
    await t.cleanup();
    await receiver.close();
  }
}

describe('callback delivery under random answers', () => {
  it(
    'every delivery is delivered, or abandoned after exactly 4 retryable failures or at a permanent answer, with an event either way',
    async () => {
      await fc.assert(fc.asyncProperty(workloads, run), { numRuns: RUNS, seed: SEED, ...(PATH === undefined ? {} : { path: PATH }) });
    },
    30_000 + RUNS * 1_000,
  );
});
