/**
 * The subscription lifecycle: one `GET /v1/events` connection (4.2 rules 2-8). Pure: the actor that owns
 * the socket feeds it frames, full-socket reports and clock ticks, and executes the `write`, `end` and
 * `destroy` actions it returns. Frames come a committed batch at a time, and a write that the socket takes
 * needs no report: one step, and one write, per batch.
 *
 * | State         | Event         | Next          | Effect                                                    |
 * |---------------|---------------|---------------|-----------------------------------------------------------|
 * | opening       | open          | replaying     | write `: open`, the replay after the cursor, the resync   |
 * | replaying     | (always)      | live.flowing  | live frames follow the replay                             |
 * | live.flowing  | frames        | live.flowing  | write them now, in one write                              |
 * | live.flowing  | blocked       | live.blocked  | the last write left the socket buffer full                |
 * | live.flowing  | tick          | live.flowing  | `: keep-alive` when idle for keepaliveMs                  |
 * | live.blocked  | frames        | live.blocked  | queue them; progress replaces the same task's queued progress, a terminal reply drops it |
 * | live.blocked  | frames        | closed        | more than maxQueuedBytes queued: slow reader, disconnect  |
 * | live.blocked  | drained       | live.flowing  | write the queue (a full socket reports `blocked` again)   |
 * | live.*        | close         | closed        | nothing queued: end (the socket flushes what it holds)    |
 * | live.*        | close         | closing       | ended (session, revocation): the queue goes, then end     |
 * | live.blocked  | close         | closed        | host closing: destroy; the reader resumes from its cursor |
 * | closing       | frames        | closing       | queue them behind what is already queued                  |
 * | closing       | drained       | closed        | write the queue, then end                                 |
 * | closing       | close         | closed        | host closing: destroy                                     |
 * | any           | disconnected  | closed        | the client left or a write failed                         |
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import { KEEPALIVE_COMMENT, OPEN_COMMENT } from '../../protocol/index.js';
import { stepper } from './step.js';

export interface Frame {
  readonly kind: 'terminal' | 'progress' | 'resync';
  /** What the frame is about: a task's id on a reply stream, a job's on a job stream. Queued progress is coalesced by it. */
  readonly subject: string;
  /** The SSE text of the frame. */
  readonly text: string;
  readonly bytes: number;
}

/**
 * Why the stream's owner ends it: what it follows ended (`session_ended`: a reply stream's session;
 * `revoked`: a job stream's integration), the host closes, or `superseded`: a second stream took the first
 * one's place (the backend's one live stream per integration).
 */
export type CloseCause = 'session_ended' | 'revoked' | 'host_closing' | 'superseded';

export type CloseReason = 'client_gone' | 'slow_reader' | CloseCause;

export interface SubscriptionContext {
  readonly keepaliveMs: number;
  readonly maxQueuedBytes: number;
  /** Frames not yet handed to the socket, oldest first. */
  readonly queue: readonly Frame[];
  /** What the socket still held unsent when it last reported being full. */
  readonly socketBuffered: number;
  readonly lastWriteAt: number;
  readonly closeReason: CloseReason | undefined;
}

export type SubscriptionEvent =
  | { type: 'open'; replay: string; at: number }
  | { type: 'frames'; frames: readonly Frame[]; at: number }
  /** Reported right after a write that left the socket buffer full, with what it holds unsent. */
  | { type: 'blocked'; buffered: number; at: number }
  | { type: 'drained'; at: number }
  | { type: 'tick'; at: number }
  | { type: 'close'; reason: CloseCause; at: number }
  | { type: 'disconnected'; at: number };

export interface SubscriptionInput {
  readonly keepaliveMs: number;
  readonly maxQueuedBytes: number;
  readonly at: number;
}

/** Queues a frame for a blocked socket: progress is coalesced by subject so it can never crowd out a terminal reply. */
export function coalesce(queue: readonly Frame[], frame: Frame): Frame[] {
  if (frame.kind === 'progress') {
    const i = queue.findIndex((f) => f.kind === 'progress' && f.subject === frame.subject);
    if (i >= 0) return queue.map((f, j) => (j === i ? frame : f));
    return [...queue, frame];
  }
  if (frame.kind === 'terminal') {
    // Progress for a task that has now settled is stale.
    return [...queue.filter((f) => !(f.kind === 'progress' && f.subject === frame.subject)), frame];
  }
  return [...queue, frame];
}

function coalesceAll(queue: readonly Frame[], frames: readonly Frame[]): readonly Frame[] {
  return frames.reduce<readonly Frame[]>(coalesce, queue);
}

/** Bytes waiting in a queue: derived, never stored, so it cannot drift from the queue. */
export function queuedBytes(queue: readonly Frame[]): number {
  let n = 0;
  for (const f of queue) n += f.bytes;
  return n;
}

const flush = (queue: readonly Frame[]) => queue.map((f) => f.text).join('');

/** Gives up on a reader: what is queued is dropped (it resumes from its cursor) and the socket destroyed. */
const abandon = (reason: 'slow_reader' | 'host_closing') =>
  [
    assign<SubscriptionContext, SubscriptionEvent, undefined, SubscriptionEvent, never>({ closeReason: reason, queue: [] }),
    { type: 'destroy', params: { reason } },
  ] as const;

export const subscriptionMachine = setup({
  types: {
    context: {} as SubscriptionContext,
    input: {} as SubscriptionInput,
    events: {} as SubscriptionEvent,
  },
  actions: {
    write: (_, _params: { chunk: string }) => {},
    end: () => {},
    destroy: (_, _params: { reason: CloseReason }) => {},
  },
  guards: {
    idle: ({ context, event }) => event.at - context.lastWriteAt >= context.keepaliveMs,
    queueEmpty: ({ context }) => context.queue.length === 0,
    hostClosing: ({ event }) => event.type === 'close' && event.reason === 'host_closing',
    overflows: ({ context, event }) => {
      if (event.type !== 'frames') return false;
      const queue = coalesceAll(context.queue, event.frames);
      return context.socketBuffered + queuedBytes(queue) > context.maxQueuedBytes;
    },
  },
}).createMachine({
  id: 'subscription',
  // `transition()` evaluates this with no input when it builds its scratch actor: keep it total and cheap.
  context: ({ input }) => ({
    keepaliveMs: input?.keepaliveMs ?? 0,
    maxQueuedBytes: input?.maxQueuedBytes ?? 0,
    queue: [],
    socketBuffered: 0,
    lastWriteAt: input?.at ?? 0,
    closeReason: undefined,
  }),
  initial: 'opening',
  on: {
    disconnected: { target: '.closed', actions: assign({ closeReason: 'client_gone', queue: [] }) },
  },
  states: {
    opening: {
      on: {
        open: {
          target: 'replaying',
          actions: [
            { type: 'write', params: ({ event }) => ({ chunk: OPEN_COMMENT + event.replay }) },
            assign({ lastWriteAt: ({ event }) => event.at }),
          ],
        },
      },
    },
    /** The replay is written in the same step as `: open`, so live frames can only come after it. */
    replaying: {
      always: 'live.flowing',
    },
    live: {
      initial: 'flowing',
      states: {
        flowing: {
          on: {
            frames: {
              actions: [
                { type: 'write', params: ({ event }) => ({ chunk: flush(event.frames) }) },
                assign({ lastWriteAt: ({ event }) => event.at }),
              ],
            },
            blocked: {
              target: 'blocked',
              actions: assign({ socketBuffered: ({ event }) => event.buffered }),
            },
            tick: {
              guard: 'idle',
              actions: [{ type: 'write', params: { chunk: KEEPALIVE_COMMENT } }, assign({ lastWriteAt: ({ event }) => event.at })],
            },
          },
        },
        blocked: {
          on: {
            frames: [
              {
                guard: 'overflows',
                target: '#subscription.closed',
                actions: abandon('slow_reader'),
              },
              {
                actions: assign({ queue: ({ context, event }) => coalesceAll(context.queue, event.frames) }),
              },
            ],
            // A closing host cannot wait for a stalled reader to drain; the reader loses nothing, it resumes.
            close: {
              guard: 'hostClosing',
              target: '#subscription.closed',
              actions: abandon('host_closing'),
            },
            drained: [
              { guard: 'queueEmpty', target: 'flowing', actions: assign({ socketBuffered: 0 }) },
              {
                target: 'flowing',
                actions: [
                  { type: 'write', params: ({ context }) => ({ chunk: flush(context.queue) }) },
                  assign({ queue: [], socketBuffered: 0, lastWriteAt: ({ event }) => event.at }),
                ],
              },
            ],
          },
        },
      },
      on: {
        close: [
          {
            guard: 'queueEmpty',
            target: 'closed',
            actions: [assign({ closeReason: ({ event }) => event.reason }), { type: 'end' }],
          },
          { target: 'closing', actions: assign({ closeReason: ({ event }) => event.reason }) },
        ],
      },
    },
    /** Ending: what is queued still goes out, then the response ends. */
    closing: {
      on: {
        frames: {
          actions: assign({ queue: ({ context, event }) => coalesceAll(context.queue, event.frames) }),
        },
        close: {
          guard: 'hostClosing',
          target: 'closed',
          actions: abandon('host_closing'),
        },
        drained: {
          target: 'closed',
          actions: [{ type: 'write', params: ({ context }) => ({ chunk: flush(context.queue) }) }, { type: 'end' }, assign({ queue: [] })],
        },
      },
    },
    closed: { type: 'final' },
  },
});

export type SubscriptionSnapshot = SnapshotFrom<typeof subscriptionMachine>;
export const subscription = stepper(subscriptionMachine);

export function initialSubscription(input: SubscriptionInput): SubscriptionSnapshot {
  return subscription.initial(input)[0];
}
