/**
 * After-commit dispatch: what is acted on once a batch is durable, kept apart from the log itself (as
 * Emmett keeps its after-commit handlers apart from its event store). The log calls `dispatch` with each
 * committed batch; every handler sees each event in order, then `batchEnd` once for the batch. A handler
 * that throws is reported with the event it was acting on, and the other handlers and the rest of the
 * batch still run: one failed action never silently ends a session's processing.
 */
export interface AfterCommitHandler<E> {
  /** Names the handler in failure reports. */
  readonly name: string;
  event?(event: E): void;
  /** Called once the whole batch is handled: where work gathered per batch (one write per reader) goes out. */
  batchEnd?(): void;
}

export type HandlerFailure<E> = (error: unknown, handler: string, event: E | undefined) => void;

export class AfterCommit<E> {
  // Replaced, never mutated, so that a handler removed during a dispatch does not disturb the loop.
  private handlers: readonly AfterCommitHandler<E>[] = [];

  constructor(private readonly onFailure: HandlerFailure<E>) {}

  /** Adds a handler after those already added; returns a function that removes it. */
  add(handler: AfterCommitHandler<E>): () => void {
    this.handlers = [...this.handlers, handler];
    return () => {
      this.handlers = this.handlers.filter((h) => h !== handler);
    };
  }

  dispatch(events: readonly E[]): void {
    const handlers = this.handlers;
    for (const event of events) {
      for (const handler of handlers) {
        if (handler.event === undefined) continue;
        try {
          handler.event(event);
        } catch (error) {
          this.onFailure(error, handler.name, event);
        }
      }
    }
    for (const handler of handlers) {
      if (handler.batchEnd === undefined) continue;
      try {
        handler.batchEnd();
      } catch (error) {
        this.onFailure(error, handler.name, undefined);
      }
    }
  }
}
