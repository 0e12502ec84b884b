/**
 * The cap on open streams in the process. The per-session reader cap alone lets a token holder open
 * streams without end, a few per invented session_id. A request holds its slot from before it subscribes
 * until its response closes, so requests that race for the last slot cannot overshoot the cap.
 */
import type { ServerResponse } from 'node:http';

export class StreamSlots {
  private held = 0;

  constructor(private readonly max: number) {}

  /** Takes a slot for `response` until it closes; false when every slot is taken. */
  take(response: ServerResponse): boolean {
    if (this.held >= this.max) return false;
    this.held += 1;
    response.once('close', () => {
      this.held -= 1;
    });
    return true;
  }
}
