/**
 * Following a live log: while anyone listens, the model is refreshed on an interval and each listener told
 * the new end whenever the log has grown. Nobody listening, nothing is read. Polling, because the log may
 * be another process's: a read-only reader is the one thing every case has.
 */
import type { InspectorModel } from './model.js';

/** How often a followed log is read (PROTOCOL.md: the inspector). */
export const LIVE_POLL_MS = 200;

export class LogWatch {
  private readonly listeners = new Set<(end: number) => void>();
  private timer: NodeJS.Timeout | undefined;
  private told = 0;

  constructor(
    private readonly model: InspectorModel,
    private readonly everyMs = LIVE_POLL_MS,
  ) {}

  /** Calls `listener` with the log's end each time it grows; returns the function that stops it. */
  listen(listener: (end: number) => void): () => void {
    this.listeners.add(listener);
    if (this.timer === undefined) {
      // Unwatched, the model may have been refreshed since: growth counts from where it is now.
      this.told = this.model.end;
      // A watch never keeps its process alive on its own.
      this.timer = setInterval(() => void this.poll(), this.everyMs).unref();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size > 0) return;
      clearInterval(this.timer);
      this.timer = undefined;
    };
  }

  private async poll(): Promise<void> {
    await this.model.refresh();
    if (this.model.end === this.told) return;
    this.told = this.model.end;
    for (const listener of this.listeners) listener(this.told);
  }
}
