/**
 * An SSE response as the kit reads it: every comment and every frame in the order they came, each
 * frame with its raw lines, so that a check can hold the wire to its rule (a comment first, one `data`
 * line of compact JSON, an `id` or none) rather than to what an EventSource would make of it.
 */
import { Arrivals } from './arrivals.js';
import { RuleBroken } from './check.js';

export type StreamItem =
  | { readonly kind: 'comment'; readonly text: string }
  | {
      readonly kind: 'frame';
      readonly id?: string;
      readonly event?: string;
      /** Each `data:` line's value. */
      readonly data: readonly string[];
      readonly lines: readonly string[];
    };

/** Bytes a stream may send the kit before it is cut: a check reads a few hundred frames at most. */
const MAX_STREAM_BYTES = 64 * 1024 * 1024;

export class WireStream {
  private readonly items: StreamItem[] = [];
  private readonly arrivals = new Arrivals();
  private pending = '';
  private received = 0;
  private ended: string | undefined;
  /** How many items `next` has handed out. */
  private read = 0;
  /** The body's first line, as it came (`: open`, for a Form A stream). */
  firstLine: string | undefined;

  constructor(
    readonly response: Response,
    private readonly controller: AbortController,
  ) {
    void this.pump();
  }

  /** The next comment or frame, once it has arrived; a `RuleBroken` if the stream ends first or `ms` pass. */
  async next(ms: number, what = 'the next frame'): Promise<StreamItem> {
    const deadline = performance.now() + ms;
    while (this.read >= this.items.length) {
      if (this.ended !== undefined) throw new RuleBroken(`the stream ended (${this.ended}) before ${what}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new RuleBroken(`no ${what} within ${ms} ms`);
      await this.arrivals.next(left);
    }
    return this.items[this.read++]!;
  }

  /** The next frame (comments passed over), or a `RuleBroken`. */
  async nextFrame(ms: number, what = 'the next frame'): Promise<Extract<StreamItem, { kind: 'frame' }>> {
    const deadline = performance.now() + ms;
    for (;;) {
      const item = await this.next(Math.max(0, deadline - performance.now()), what);
      if (item.kind === 'frame') return item;
    }
  }

  /** Everything that has arrived so far that `next` has not handed out, after waiting `ms` for more. */
  async drain(ms: number): Promise<StreamItem[]> {
    const deadline = performance.now() + ms;
    while (this.ended === undefined && performance.now() < deadline) await this.arrivals.next(deadline - performance.now());
    const rest = this.items.slice(this.read);
    this.read = this.items.length;
    return rest;
  }

  /** Why the stream ended, once it has. */
  get end(): string | undefined {
    return this.ended;
  }

  close(): void {
    this.controller.abort();
  }

  private async pump(): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.response.body as unknown as AsyncIterable<Uint8Array>) {
        this.received += chunk.byteLength;
        if (this.received > MAX_STREAM_BYTES) {
          this.ended = `over ${MAX_STREAM_BYTES} bytes: cut by the kit`;
          this.controller.abort();
          break;
        }
        this.feed(decoder.decode(chunk, { stream: true }));
        this.arrivals.arrived();
      }
      this.ended ??= 'closed by the implementation';
    } catch (error) {
      this.ended ??= this.controller.signal.aborted ? 'closed by the kit' : `cut: ${(error as Error).message}`;
    }
    this.arrivals.arrived();
  }

  private feed(text: string): void {
    this.pending += text;
    if (this.firstLine === undefined && /\r|\n/.test(this.pending)) this.firstLine = this.pending.split(/\r\n|\n|\r/)[0];
    // Blocks end at a blank line; a comment block is one whose every line is a comment.
    const blocks = this.pending.split(/\r\n\r\n|\n\n|\r\r/);
    this.pending = blocks.pop()!;
    for (const block of blocks) {
      const lines = block.split(/\r\n|\n|\r/);
      if (lines.every((line) => line.startsWith(':'))) {
        for (const line of lines) this.items.push({ kind: 'comment', text: line.slice(1).trimStart() });
        continue;
      }
      let id: string | undefined;
      let event: string | undefined;
      const data: string[] = [];
      for (const line of lines) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') id = value;
        else if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      this.items.push({ kind: 'frame', ...(id === undefined ? {} : { id }), ...(event === undefined ? {} : { event }), data, lines });
    }
  }
}
