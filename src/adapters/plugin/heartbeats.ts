/**
 * Heartbeats (2.3): one at start, then one every `interval_s` of the backend's last answer (30 s until it
 * says otherwise). A heartbeat that fails is logged and the next goes out on schedule: the backend shows
 * the integration offline after three missed, and online again after one.
 */
import type { BaseLogger } from 'pino';
import type { Clock, TimerHandle } from '../../engine/clock.js';
import { HeartbeatAnswer, type Heartbeat } from '../../protocol/index.js';
import type { Backend } from './backend.js';

const HEARTBEAT_INTERVAL_MS = 30_000;

export interface HeartbeatsOptions {
  readonly backend: Backend;
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

  private beat(): Promise<void> {
    this.inFlight = this.send().finally(() => {
      if (!this.stopped) this.timer = this.options.clock.setTimeout(() => void this.beat(), this.intervalMs);
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
    const parsed = answer.status === 200 ? HeartbeatAnswer.safeParse(answer.body) : undefined;
    if (parsed?.success !== true) {
      logger[answer.status === 401 || answer.status === 404 ? 'error' : 'warn']({ status: answer.status, body: answer.body }, 'heartbeat refused or answered with something else than a heartbeat answer');
      return;
    }
    this.intervalMs = parsed.data.interval_s * 1000;
    onAnswer(parsed.data);
  }
}
