/** A stream reader's socket, as the engine's SubscriberTransport, for tests that drive actors without HTTP. */
import type { SubscriberTransport } from '../../engine/core/subscription-actor.js';

export class FakeSocket implements SubscriberTransport {
  readonly written: string[] = [];
  closed = false;
  full = false;
  ended = false;
  destroyed = false;
  private readonly drain: Array<() => void> = [];
  private readonly close: Array<() => void> = [];
  get buffered() {
    return this.full ? 1_000 : 0;
  }
  write(chunk: string) {
    this.written.push(chunk);
    return !this.full;
  }
  end() {
    this.ended = true;
  }
  destroy() {
    this.destroyed = true;
  }
  onDrain(listener: () => void) {
    this.drain.push(listener);
  }
  onClose(listener: () => void) {
    this.close.push(listener);
  }
  /** The socket emptied its buffer. */
  drained() {
    for (const listener of this.drain) listener();
  }
}
