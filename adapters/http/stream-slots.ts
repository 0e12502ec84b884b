/**
 * The cap on open streams in the process. The per-session reader cap alone lets a token holder open
 * streams without end, a few per invented session_id. A request holds its slot from before it subscribes
 * until its response closes, so requests that race for the last slot cannot overshoot the cap. A slot
 * taken for a key (the backend's integration) also counts against that key's own cap; a key holds an
 * entry only while it holds a slot, so the keys counted are the ones with a stream open.
 */
import type { ServerResponse } from 'node:http';

/** `Retry-After` of a refusal by a stream cap: streams free up only as clients leave, at no moment anyone knows. */
export const STREAMS_RETRY_AFTER_SECONDS = 5;

export class StreamSlots {
  private held = 0;
  private readonly heldBy = new Map<string, number>();

  constructor(
    private readonly max: number,
    private readonly maxPerKey = max,
  ) {}

  /** Takes a slot for `response` until it closes: `full` when every slot is taken, `key_full` when every one `key` may hold is. */
  take(response: ServerResponse, key?: string): 'taken' | 'full' | 'key_full' {
    if (this.held >= this.max) return 'full';
    const ofKey = key === undefined ? 0 : (this.heldBy.get(key) ?? 0);
    if (ofKey >= this.maxPerKey) return 'key_full';
    this.held += 1;
    if (key !== undefined) this.heldBy.set(key, ofKey + 1);
    response.once('close', () => {
      this.held -= 1;
      if (key === undefined) return;
      const left = this.heldBy.get(key)! - 1;
      if (left === 0) this.heldBy.delete(key);
      else this.heldBy.set(key, left);
    });
    return 'taken';
  }
}
