/**
 * An SSE response as the kit reads it: every comment and every frame in the order they came, each
 * frame with its raw lines, so that a check can hold the wire to its rule (a comment first, one `data`
 * line of compact JSON, an `id` or none) rather than to what an EventSource would make of it. Bounded:
 * past 16 MiB, or a line of over 4 Mi characters, the kit cuts the stream.
 */
import { Arrivals } from './arrivals.js';
import { RuleBroken, rule, shown } from './check.js';

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

/** A frame as the kit read it. */
export type WireFrame = Extract<StreamItem, { kind: 'frame' }>;

/** Bytes a stream may send the kit before it is cut: a check reads a few hundred frames at most. */
const MAX_STREAM_BYTES = 16 * 1024 * 1024;

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
  /** The field lines of the frame under way. */
  private readonly frameLines: string[] = [];

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
      if (left <= 0) throw new RuleBroken(`${what}: none came within ${Math.round(ms)} ms`);
      await this.arrivals.next(left);
    }
    return this.items[this.read++]!;
  }

  /** The next frame (comments passed over), or a `RuleBroken`. */
  async nextFrame(ms: number, what = 'the next frame'): Promise<WireFrame> {
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
    // Line by line, as the SSE standard reads a stream: a comment is a line of its own wherever it
    // stands; a frame ends at a blank line. Only the text after the last line end is kept for the next chunk.
    const lines = this.pending.split(/\r\n|\n|\r/);
    this.pending = lines.pop()!;
    if (this.pending.length > MAX_LINE_CHARS) {
      this.ended = `a line of over ${MAX_LINE_CHARS} characters: cut by the kit`;
      this.controller.abort();
      return;
    }
    for (const line of lines) {
      this.firstLine ??= line;
      if (line.startsWith(':')) this.items.push({ kind: 'comment', text: line.slice(1).trimStart() });
      else if (line !== '') this.frameLines.push(line);
      else if (this.frameLines.length > 0) this.items.push(frameOf(this.frameLines.splice(0)));
    }
  }
}

/** Lines longer than this end the stream: a reply is at most 256 KiB of JSON (spec 8), a frame's line that and a little. */
const MAX_LINE_CHARS = 4 * 1024 * 1024;

/** A frame of its field lines (comments left out), as the SSE standard reads `id`, `event` and `data`. */
function frameOf(lines: readonly string[]): WireFrame {
  let id: string | undefined;
  let event: string | undefined;
  const data: string[] = [];
  for (const line of lines) {
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return { kind: 'frame', ...(id === undefined ? {} : { id }), ...(event === undefined ? {} : { event }), data, lines };
}

/** A frame's data (its `data` lines joined) parsed as a JSON object; a `RuleBroken` if it is not one. */
export function dataObject(frame: WireFrame): Record<string, unknown> {
  const data = frame.data.join('\n');
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw new RuleBroken(`a frame's data is not JSON: ${shown(data)}`);
  }
  rule(typeof value === 'object' && value !== null && !Array.isArray(value), `a frame's data is not a JSON object: ${shown(data)}`);
  return value as Record<string, unknown>;
}
