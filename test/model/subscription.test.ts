/**
 * The subscription statechart (one `GET /v1/events` connection, 4.2 rules 2-8), model-based (model.ts):
 * each transition driven through a real host over loopback HTTP, one fresh host a path (a path may close
 * it), by a real SSE reader that can stop reading (a slow reader), leave, or wait for keep-alives on the
 * host's simulated clock, and by what the held agent says. After each step the host's view of the
 * session must show its reader in the machine's state (and with a queue, or none), and the reader what a
 * client sees of it: its frames, a keep-alive, a response ended as HTTP ends one or cut.
 *
 * The walk tells states apart by whether frames are queued (the `close` guard reads it) and frames by
 * whether they overflow the queue's bound (the `frames` guard does).
 */
import { afterEach, expect } from 'vitest';
import type { AnyMachineSnapshot } from 'xstate';
import { dotPath } from '../../machines/core/state-value.js';
import { subscriptionMachine, type SubscriptionEvent } from '../../machines/core/subscription.js';
import { SimulatedClock } from '../support/clock.js';
import { startHost, TOKEN, type TestHost } from '../support/host.js';
import { post, request } from '../support/http.js';
import { SseConnection } from '../support/sse.js';
import { eventually, waitFor } from '../support/wait.js';
import { HeldAgent } from './held-agent.js';
import { describeModel } from './model.js';

const KEEPALIVE_MS = 20_000;
/** A reader's bound: a blocked socket holds at most one big reply (and 16 KiB), so two more overflow it. */
const MAX_QUEUED = 512 * 1024;
const BIG = 'x'.repeat(200 * 1024);

const agent = new HeldAgent();
let hosts = 0;
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Subject {
  readonly t: TestHost;
  readonly clock: SimulatedClock;
  readonly session: string;
  stream: SseConnection | undefined;
  hostClosed: boolean;
  /** Whether the reader's end should be a cut (it was blocked or closing when told to go). */
  cut: boolean;
  /** Tasks started for a big reply, and tasks started for a progress frame (each its own, so that none coalesces). */
  replies: number;
  labels: number;
  /** What was queued for the reader before the step. */
  queuedBefore: number;
}

/** The walk's frames that overflow its bound (1,000 bytes). */
const overBound = (event: SubscriptionEvent) => event.type === 'frames' && event.frames.some((frame) => frame.bytes > 1_000);
const queued = (snapshot: AnyMachineSnapshot) => (snapshot.context as { queue: unknown[] }).queue.length > 0;

async function readerStates(subject: Subject): Promise<Array<{ state: string; queued_bytes: number }>> {
  const view = await request(`${subject.t.url}/v1/sessions/${subject.session}`, { token: TOKEN });
  return (view.body as { reader_states: Array<{ state: string; queued_bytes: number }> }).reader_states;
}

async function started(subject: Subject, task: string): Promise<void> {
  expect((await post(subject.t.url, TOKEN, { session_id: subject.session, task_id: task, text: 'hello' })).status).toBe(202);
  await waitFor(`the agent to get ${task}`, () => agent.has(subject.session, task), { everyMs: 5 });
}

async function bigReply(subject: Subject): Promise<void> {
  const task = `big-${(subject.replies += 1)}`;
  await started(subject, task);
  await agent.reply(subject.session, task).message(BIG);
}

const queuedBytes = async (subject: Subject) => (await readerStates(subject))[0]?.queued_bytes ?? 0;

/** Big replies until the session's reader is as `done` says (or gone). */
async function bigRepliesUntil(subject: Subject, what: string, done: (states: Array<{ state: string }>) => boolean): Promise<void> {
  for (let i = 0; i < 200; i += 1) {
    await bigReply(subject);
    if (done(await readerStates(subject))) return;
  }
  throw new Error(`200 big replies and still not ${what}`);
}

describeModel<Subject, SubscriptionEvent>('subscription', {
  machine: subscriptionMachine,
  input: { keepaliveMs: 1_000, maxQueuedBytes: 1_000, at: 0 },
  events: [
    { type: 'open', replay: '', at: 1 },
    { type: 'frames', frames: [{ kind: 'progress', subject: 'p', text: 'p', bytes: 10 }], at: 2 },
    { type: 'frames', frames: [{ kind: 'terminal', subject: 't', text: 't', bytes: 5_000 }], at: 2 },
    { type: 'blocked', buffered: 100, at: 2 },
    { type: 'drained', at: 3 },
    { type: 'tick', at: 1e9 },
    { type: 'close', reason: 'session_ended', at: 4 },
    { type: 'close', reason: 'host_closing', at: 4 },
    { type: 'disconnected', at: 5 },
  ],
  stateKey: (snapshot) => `${dotPath(snapshot.value)}${queued(snapshot) ? ' (queued)' : ''}`,
  eventKey: (event) => {
    if (event.type === 'frames') return overBound(event) ? 'frames (over the bound)' : 'frames';
    return event.type === 'close' ? `close (${event.reason})` : event.type;
  },
  unreachable: {
    'opening disconnected': 'a reader is opened in the same step that creates it (engine/readers.ts): no socket event comes between',
    'closing (queued) frames': "a session's frames are pushed before its end closes its readers, and nothing follows the end",
    'closing (queued) frames (over the bound)':
      "a session's frames are pushed before its end closes its readers, and nothing follows the end",
  },
  // A host of its own (a path may close it) on a simulated clock, and a session it knows, with nothing pending.
  async start() {
    const clock = new SimulatedClock();
    const t = await startHost({ agent, clock, keepaliveMs: KEEPALIVE_MS, readerMaxQueuedBytes: MAX_QUEUED });
    const subject: Subject = {
      t,
      clock,
      session: `subscription-${(hosts += 1)}`,
      stream: undefined,
      hostClosed: false,
      cut: false,
      replies: 0,
      labels: 0,
      queuedBefore: 0,
    };
    cleanups.push(async () => {
      subject.stream?.close();
      await t.cleanup();
    });
    await started(subject, 'first');
    await agent.reply(subject.session, 'first').message('before any reader');
    return subject;
  },
  drivers: {
    open: async (subject) => {
      subject.stream = await SseConnection.open(`${subject.t.url}/v1/events?session_id=${subject.session}`, { token: TOKEN });
    },
    frames: async (subject, from, event) => {
      subject.queuedBefore = await queuedBytes(subject);
      if (overBound(event)) {
        if (from.matches({ live: 'blocked' })) await bigRepliesUntil(subject, 'gone', (states) => states.length === 0);
        else await bigReply(subject);
        return;
      }
      const task = `typing-${(subject.labels += 1)}`;
      await started(subject, task);
      await agent.reply(subject.session, task).typing(`label ${subject.labels}`);
    },
    blocked: async (subject) => {
      subject.stream!.pause();
      await bigRepliesUntil(subject, 'blocked', (states) => states[0]?.state === 'live.blocked');
    },
    drained: async (subject) => subject.stream!.resume(),
    tick: async (subject) => subject.clock.increment(KEEPALIVE_MS),
    close: async (subject, from, event) => {
      subject.cut = !from.matches({ live: 'flowing' });
      if (event.type !== 'close' || event.reason === 'session_ended') expect(await subject.t.host.endSession(subject.session)).toBe(true);
      else {
        subject.hostClosed = true;
        await subject.t.close();
      }
    },
    disconnected: async (subject) => subject.stream!.close(),
  },
  async check(subject, event, to) {
    const stream = subject.stream!;
    const state = dotPath(to.value);
    if (!subject.hostClosed) {
      const want = state === 'closed' ? [] : [{ state, queued: queued(to) }];
      await eventually(
        `the reader ${JSON.stringify(want)}`,
        () => readerStates(subject),
        (states) => JSON.stringify(states.map((s) => ({ state: s.state, queued: s.queued_bytes > 0 }))) === JSON.stringify(want),
        { everyMs: 10 },
      );
    }
    if (state === 'closed') {
      if (event.type === 'disconnected') return;
      // What a reader sees of its end: ended as HTTP ends a response when the session ended, cut when the host closed or gave up on it.
      stream.resume();
      await stream.untilEnded(5_000);
      const cut = (event.type === 'close' && event.reason === 'host_closing' && subject.cut) || overBound(event);
      expect(stream.complete, cut ? 'the response cut' : 'the response ended').toBe(!cut);
      return;
    }
    if (to.matches({ live: 'blocked' }) || state === 'closing') {
      // A frame for a blocked reader waits in its queue.
      if (event.type === 'frames') expect(await queuedBytes(subject), 'what is queued').toBeGreaterThan(subject.queuedBefore);
      return;
    }
    // Flowing: what the step sent is on the wire now.
    const label = `label ${subject.labels}`;
    switch (event.type) {
      case 'open':
        await stream.until((s) => s.comments.includes('open'), 5_000, ': open');
        break;
      case 'tick':
        await stream.until((s) => s.comments.includes('keep-alive'), 5_000, ': keep-alive');
        break;
      case 'frames':
        if (overBound(event)) await stream.until((s) => s.replies.length >= subject.replies, 10_000, `reply ${subject.replies}`);
        else await stream.until((s) => s.frames.some((frame) => frame.data.includes(`"${label}"`)), 5_000, label);
        break;
      case 'drained':
        await stream.until(
          (s) =>
            s.replies.length >= subject.replies && (subject.labels === 0 || s.frames.some((frame) => frame.data.includes(`"${label}"`))),
          10_000,
          'what was queued',
        );
        break;
      default:
        break;
    }
  },
});
