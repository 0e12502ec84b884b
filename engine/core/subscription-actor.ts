/**
 * Runs one subscription statechart against a real connection: feeds it frames, full-socket reports and
 * keep-alive ticks, and carries out the writes, ends and destroys it decides.
 */
import {
  initialSubscription,
  queuedBytes,
  subscription,
  type CloseCause,
  type Frame,
  type SubscriptionEvent,
  type SubscriptionSnapshot,
} from '../../machines/core/subscription.js';
import { dotPath } from '../../machines/core/state-value.js';
import type { Clock, TimerHandle } from './clock.js';

/** One live reader of a stream, as its subscription statechart stands. */
export interface ReaderView {
  readonly state: string;
  /** Frames queued for it while its socket is full. */
  readonly queued_bytes: number;
  /** What its socket held unsent when it last reported being full. */
  readonly socket_buffered: number;
}

/** The connection as the engine needs it; the HTTP adapter implements it over a raw response. */
export interface SubscriberTransport {
  /** False when the socket's buffer is full (the data is still queued by the socket). */
  write(chunk: string): boolean;
  /** Bytes the socket holds unsent. */
  readonly buffered: number;
  readonly closed: boolean;
  end(): void;
  destroy(): void;
  onDrain(listener: () => void): void;
  onClose(listener: () => void): void;
}

export interface SubscriptionActorOptions {
  readonly keepaliveMs: number;
  readonly maxQueuedBytes: number;
}

export class SubscriptionActor {
  private snapshot: SubscriptionSnapshot;
  private timer: TimerHandle;
  private done = false;

  constructor(
    private readonly transport: SubscriberTransport,
    private readonly clock: Clock,
    options: SubscriptionActorOptions,
    private readonly onClosed: (actor: SubscriptionActor) => void,
  ) {
    this.snapshot = initialSubscription({ ...options, at: clock.now() });
    transport.onDrain(() => this.send({ type: 'drained', at: this.clock.now() }));
    transport.onClose(() => this.send({ type: 'disconnected', at: this.clock.now() }));
  }

  get state(): SubscriptionSnapshot {
    return this.snapshot;
  }

  get view(): ReaderView {
    const { queue, socketBuffered } = this.snapshot.context;
    return { state: dotPath(this.snapshot.value), queued_bytes: queuedBytes(queue), socket_buffered: socketBuffered };
  }

  open(replay: string): void {
    this.send({ type: 'open', replay, at: this.clock.now() });
    this.scheduleKeepalive();
  }

  /** The frames of one committed batch, in order. */
  push(frames: readonly Frame[]): void {
    this.send({ type: 'frames', frames, at: this.clock.now() });
  }

  close(reason: CloseCause): void {
    this.send({ type: 'close', reason, at: this.clock.now() });
  }

  private send(event: SubscriptionEvent): void {
    if (this.done) return;
    const [next, actions] = subscription.next(this.snapshot, event);
    this.snapshot = next;
    for (const action of actions) {
      switch (action.type) {
        case 'write': {
          if (this.transport.closed) {
            // A write to a reader that is gone (a failed keep-alive included) drops it at once.
            this.send({ type: 'disconnected', at: this.clock.now() });
            return;
          }
          const { chunk } = action.params as { chunk: string };
          if (!this.transport.write(chunk)) this.send({ type: 'blocked', buffered: this.transport.buffered, at: this.clock.now() });
          break;
        }
        case 'end':
          this.transport.end();
          break;
        case 'destroy':
          this.transport.destroy();
          break;
        default:
          // xstate's own actions (raise, sendTo, spawnChild): the subscription machine uses none of them.
          break;
      }
    }
    if (this.snapshot.status === 'done' && !this.done) {
      this.done = true;
      this.clock.clearTimeout(this.timer);
      this.onClosed(this);
    }
  }

  private scheduleKeepalive(): void {
    if (this.done) return;
    const { keepaliveMs, lastWriteAt } = this.snapshot.context;
    const delay = Math.max(1, lastWriteAt + keepaliveMs - this.clock.now());
    this.timer = this.clock.setTimeout(() => {
      this.send({ type: 'tick', at: this.clock.now() });
      this.scheduleKeepalive();
    }, delay);
  }
}
