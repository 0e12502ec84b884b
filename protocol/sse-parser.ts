/**
 * An incremental `text/event-stream` parser (the HTML standard's "event stream interpretation"), fed the
 * stream's text as it arrives. Written here rather than taken from undici's `EventSource` because the
 * plugin and the clients must own reconnection (their own backoff, `Retry-After`, the cursor kept across
 * restarts, a `superseded` frame that must stop reconnects) and send a Bearer header, which the browser's
 * `EventSource` cannot. Browser-safe.
 */
export interface SseEvent {
  /** The event's `id`, if it set one. */
  readonly id?: string;
  /** `message` when the frame has no `event:` line. */
  readonly event: string;
  readonly data: string;
}

export class SseParser {
  private buffer = '';
  private afterCr = false;
  private data: string[] = [];
  private event = '';
  private id: string | undefined;

  /** Feeds a chunk of text; returns the events it completed, in order. */
  feed(chunk: string): SseEvent[] {
    // A chunk that ended in CR ended a line: an LF opening the next one is the rest of that CRLF.
    if (this.afterCr && chunk.startsWith('\n')) chunk = chunk.slice(1);
    this.afterCr = chunk.endsWith('\r');
    this.buffer += chunk;
    const events: SseEvent[] = [];
    const lines = this.buffer.split(/\r\n|\n|\r/);
    this.buffer = lines.pop() ?? '';
    for (const line of lines) {
      if (line === '') {
        const dispatched = this.dispatch();
        if (dispatched !== undefined) events.push(dispatched);
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') this.data.push(value);
      else if (field === 'event') this.event = value;
      else if (field === 'id' && !value.includes('\0')) this.id = value;
    }
    return events;
  }

  private dispatch(): SseEvent | undefined {
    const { data, event, id } = this;
    this.data = [];
    this.event = '';
    this.id = undefined;
    if (data.length === 0) return undefined;
    return { ...(id !== undefined ? { id } : {}), event: event || 'message', data: data.join('\n') };
  }
}

/** A response body's text as it arrives, read with a reader (not `for await`, which not every browser's streams support). */
export async function* textChunks(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    // Leaving early (the caller stopped reading) cancels the body, which closes the connection.
    await reader.cancel().catch(() => undefined);
  }
}
