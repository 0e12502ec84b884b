/**
 * Append first, act after. A decision's events are folded into memory at once (so the next decision sees
 * them: a retried POST is a duplicate even before the first one commits) and queued in the log's current
 * batch; whoever appends gets to act only once the batch is committed. Generic over the event type, so
 * any engine over an event log (the host's, the backend's) appends the same way.
 */
import type { EventLog, LogRecord } from '../../storage/event-log.js';

export class Appender<E extends LogRecord> {
  constructor(
    private readonly log: EventLog<E>,
    private readonly fold: (event: E) => void,
    private readonly onFatal: (error: unknown) => void,
  ) {}

  /** Resolves once every event is committed. A log that cannot take them goes to `onFatal`, and the append rejects with its error. */
  async append(events: readonly E[]): Promise<void> {
    let committed: Promise<void> = Promise.resolve();
    for (const event of events) {
      this.fold(event);
      committed = this.log.append(event);
    }
    try {
      await committed;
    } catch (error) {
      this.onFatal(error);
      throw error;
    }
  }

  /**
   * A decision's events: appended, resolving once committed. A decision of none still waits for what
   * was appended before it, since its answer (a duplicate, say) may rest on events still in the batch:
   * only what the log holds is acknowledged.
   */
  async commit(events: readonly E[]): Promise<void> {
    if (events.length > 0) await this.append(events);
    else if (this.uncommitted.length > 0) await this.settled();
  }

  /** Resolves once nothing appended so far is uncommitted. */
  settled(): Promise<void> {
    return this.log.settled();
  }

  /** The committed events of one stream, oldest first. */
  *history(stream: string): IterableIterator<E> {
    for (const { event } of this.log.readStream(stream)) yield event;
  }

  /** Events appended and folded but not yet committed, oldest first. */
  get uncommitted(): readonly E[] {
    return this.log.uncommitted;
  }
}
