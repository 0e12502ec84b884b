/**
 * Heartbeats (2.3): one at start, then one every `interval_s` of the backend's last answer (30 s until it
 * says otherwise; at most 10 minutes), never sooner, whatever changes in between: a status change waits
 * for the next. A heartbeat that fails is logged and the next goes out on schedule: the backend shows the
 * integration offline after so many missed (three unless its operator says otherwise), and online again
 * after one. A 429 (news of the plugin sooner than the backend logs it, PROTOCOL.md 6e.20) is sent again
 * once its `Retry-After` has passed. The last one, as the plugin stops, says `stopped`: the backend shows
 * the integration offline at once, not intervals later.
 */
import type { BaseLogger } from 'pino';
import type { Clock, TimerHandle } from '../../engine/core/clock.js';
import { HeartbeatAnswer, MAX_HEARTBEAT_INTERVAL_S, type Heartbeat } from '../../protocol/index.js';
import type { BackendLink } from './backend-link.js';

const HEARTBEAT_INTERVAL_MS = 30_000;
/** How long the last heartbeat may take: a backend that is gone must not hold up a stop. */
const FAREWELL_MS = 2_000;

export interface HeartbeatsOptions {
  readonly backend: BackendLink;
  readonly clock: Clock;
  readonly logger: BaseLogger;
  /** The heartbeat as things stand now. */
  readonly body: () => Heartbeat;
  readonly onAnswer: (answer: HeartbeatAnswer) => void;
}

export class Heartbeats {
  intervalMs = HEARTBEAT_INTERVAL_MS;
  /** Heartbeats done with (answered or failed), each with the next one scheduled. */
  done = 0;
  private timer: TimerHandle;
  /** The wait a 429 asked for, instead of the interval, before the next heartbeat. */
  private retryAfterMs: number | undefined;
  private stopped = false;
  private readonly ending = new AbortController();
  private inFlight: Promise<void> | undefined;

  constructor(private readonly options: HeartbeatsOptions) {}

  /** Sends the first heartbeat; resolves once it is answered or has failed. */
  start(): Promise<void> {
    return this.beat();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.options.clock.clearTimeout(this.timer);
    this.ending.abort();
    await this.inFlight;
  }

  /** The last heartbeat, after `stop()`: the plugin is stopping. Best effort: what the backend answers changes nothing here. */
  async farewell(): Promise<void> {
    const answer = await this.options.backend.heartbeat(
      { ...this.options.body(), status: 'stopped', running_job_ids: [] },
      AbortSignal.timeout(FAREWELL_MS),
    );
    if (answer.kind === 'answered' && answer.status === 200)
      return this.options.logger.debug('the last heartbeat (stopped) answered: the backend shows this plugin offline');
    const why = answer.kind === 'unreachable' ? { err: answer.error } : { status: answer.status, body: answer.body };
    this.options.logger.info(
      why,
      'the last heartbeat (stopped) was not taken: the backend shows this plugin offline when heartbeats stop coming',
    );
  }

  private beat(): Promise<void> {
    this.inFlight = this.send().finally(() => {
      if (!this.stopped) this.timer = this.options.clock.setTimeout(() => void this.beat(), this.retryAfterMs ?? this.intervalMs);
      this.retryAfterMs = undefined;
      this.done += 1;
    });
    return this.inFlight;
  }

  private async send(): Promise<void> {
    const { backend, logger, body, onAnswer } = this.options;
    const answer = await backend.heartbeat(body(), this.ending.signal);
    if (this.stopped) return;
    if (answer.kind === 'unreachable') {
      logger.warn({ err: answer.error }, 'heartbeat failed: the backend is unreachable');
      return;
    }
    if (answer.status === 429 && answer.retryAfterMs !== undefined) {
      logger.info(
        { status: 429, body: answer.body, retry_after_ms: answer.retryAfterMs },
        'heartbeat answered 429: sent again after its Retry-After',
      );
      // Never sooner than a second: a Retry-After of 0 must not make a tight loop.
      this.retryAfterMs = Math.max(1000, answer.retryAfterMs);
      return;
    }
    const parsed = answer.status === 200 ? HeartbeatAnswer.safeParse(answer.body) : undefined;
    if (parsed?.success !== true) {
      logger[answer.status === 401 || answer.status === 404 ? 'error' : 'warn'](
        { status: answer.status, body: answer.body },
        'heartbeat refused or answered with something else than a heartbeat answer',
      );
      return;
    }
    logger.debug(
      { interval_s: parsed.data.interval_s, ...(parsed.data.refused === undefined ? {} : { refused: parsed.data.refused }) },
      'heartbeat answered',
    );
    // The backend's operator sets the interval (PROTOCOL.md 6e.25); one past the bound would leave the integration offline for good.
    this.intervalMs = Math.min(parsed.data.interval_s, MAX_HEARTBEAT_INTERVAL_S) * 1000;
    onAnswer(parsed.data);
  }
}
