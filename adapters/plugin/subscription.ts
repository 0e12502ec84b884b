/**
 * The plugin's subscription to its integration's job stream: one stream at a time, reconnected after
 * every end with full-jitter backoff (or the `Retry-After` a 429 or 503 asked for), resumed with
 * `Last-Event-ID`. The failure count resets once a stream has stayed up a while, so a stream that drops
 * now and then is reopened at once, and a backend that keeps refusing is tried ever less often. A
 * `superseded` frame (a second stream took over the integration) is a conflict: it is reported, and the
 * next try waits the whole backoff ceiling, so two plugins on one integration do not take it from each
 * other in a tight loop.
 */
import type { BaseLogger } from 'pino';
import type { Clock } from '../../engine/core/clock.js';
import type { BackendLink } from './backend-link.js';
import { BACKOFF, fullJitter } from '../../protocol/backoff.js';
import { sleep } from '../../engine/core/clock.js';
import { SseParser } from '../../protocol/sse-parser.js';

/** A stream open this long counts as having stayed up: the next drop starts the backoff afresh. */
export const STABLE_STREAM_MS = 10_000;

/** Plugins told to reconnect (their node drains) come back within this. */
const MOVE_SPREAD_MS = 250;

export type StreamState = 'connecting' | 'open' | 'waiting' | 'paused' | 'stopped';

type Ending =
  | { readonly kind: 'dropped'; readonly openedAt: number }
  | { readonly kind: 'superseded' }
  /** The backend node drains: another takes the stream at once. */
  | { readonly kind: 'moved' }
  | { readonly kind: 'failed'; readonly status?: number; readonly retryAfterMs?: number };

export interface SubscriptionOptions {
  readonly backend: BackendLink;
  readonly clock: Clock;
  readonly random: () => number;
  readonly logger: BaseLogger;
  /** Where to resume from: the newest cursor the plugin has seen. */
  readonly cursor: () => string | undefined;
  /** A job frame's data and its `id`. */
  readonly onJob: (data: string, id: string | undefined) => void;
  /** A key rotation's request (`event: rekey`). */
  readonly onRekey: (data: string) => void;
}

export class Subscription {
  state: StreamState = 'paused';
  /** Streams opened so far. */
  opened = 0;
  /** The wait before the next try, while waiting. */
  nextTryInMs: number | undefined;
  private failures = 0;
  private stopped = false;
  private paused = true;
  /** Ends the open stream, or the wait before the next try, when the subscription pauses or stops. */
  private interrupt = new AbortController();
  private resumed: (() => void) | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: SubscriptionOptions) {}

  /** Opens the stream (again), at once. */
  resume(): void {
    if (this.stopped || !this.paused) return;
    this.paused = false;
    this.loop ??= this.run();
    this.resumed?.();
  }

  /** Closes the stream and opens none until `resume`. */
  pause(): void {
    if (this.stopped || this.paused) return;
    this.paused = true;
    this.interrupt.abort();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.interrupt.abort();
    this.resumed?.();
    await this.loop;
    this.state = 'stopped';
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (this.paused) {
        this.state = 'paused';
        await new Promise<void>((resolve) => (this.resumed = resolve));
        this.resumed = undefined;
        continue;
      }
      this.interrupt = new AbortController();
      const ending = await this.once(this.interrupt.signal);
      if (this.stopped || this.paused) continue;
      const wait = this.waitAfter(ending);
      this.state = 'waiting';
      this.nextTryInMs = wait;
      await sleep(this.options.clock, wait, this.interrupt.signal);
      this.nextTryInMs = undefined;
    }
  }

  private waitAfter(ending: Ending): number {
    const { clock, random, logger } = this.options;
    if (ending.kind === 'moved') {
      logger.info('the backend node drains: reconnecting');
      this.failures = 0;
      // Spread over a moment: every plugin of the node reconnects at once otherwise.
      return Math.floor(random() * MOVE_SPREAD_MS);
    }
    if (ending.kind === 'dropped' && clock.now() - ending.openedAt >= STABLE_STREAM_MS) this.failures = 0;
    this.failures += 1;
    if (ending.kind === 'superseded') {
      logger.warn(
        { failures: this.failures },
        'another stream took over this integration: is a second plugin running with the same integration? backing off',
      );
      return BACKOFF.capMs;
    }
    if (ending.kind === 'failed') {
      const level = ending.status === 401 || ending.status === 404 ? 'error' : 'warn';
      logger[level](
        { status: ending.status, failures: this.failures },
        ending.status === undefined ? 'job stream unreachable' : 'job stream refused',
      );
      if (ending.retryAfterMs !== undefined) return ending.retryAfterMs;
    }
    return fullJitter(this.failures, random);
  }

  private async once(signal: AbortSignal): Promise<Ending> {
    this.state = 'connecting';
    const answer = await this.options.backend.stream(this.options.cursor(), signal);
    if (answer.kind === 'unreachable') return { kind: 'failed' };
    if (answer.kind === 'answered')
      return { kind: 'failed', status: answer.status, ...(answer.retryAfterMs !== undefined ? { retryAfterMs: answer.retryAfterMs } : {}) };
    this.state = 'open';
    this.opened += 1;
    const openedAt = this.options.clock.now();
    const parser = new SseParser();
    try {
      for await (const chunk of answer.body) {
        for (const event of parser.feed(chunk)) {
          if (event.event === 'superseded') return { kind: 'superseded' };
          if (event.event === 'reconnect') return { kind: 'moved' };
          if (event.event === 'message') this.options.onJob(event.data, event.id);
          else if (event.event === 'rekey') this.options.onRekey(event.data);
        }
      }
    } catch {
      // A reset connection, an idle stream past its limit, or our own interrupt: the stream ended.
    }
    return { kind: 'dropped', openedAt };
  }
}
