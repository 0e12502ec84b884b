/**
 * The demo's timeline on stdout, for a person: each line the time since the start, who did it, and what
 * happened; a step that takes long says it is still waiting, so a slow machine never looks stuck.
 */
export class DemoTimeline {
  private readonly started = performance.now();

  constructor(private readonly write: (text: string) => void = (text) => process.stdout.write(text)) {}

  /** ` 12.34s  who       what` */
  say(who: string, what: string): void {
    const seconds = ((performance.now() - this.started) / 1000).toFixed(2);
    this.write(`${seconds.padStart(7)}s  ${who.padEnd(9)} ${what}\n`);
  }

  /** Lines that belong to the line before, indented under its text. */
  more(lines: readonly string[]): void {
    for (const line of lines) this.write(`${' '.repeat(20)}${line}\n`);
  }

  /** Plain text, not on the clock: headings and the closing notes. */
  text(text: string): void {
    this.write(`${text}\n`);
  }

  /**
   * Waits for `work`, saying every `everyMs` that it still does, and fails it after `limitMs` with a
   * message that names the step, so that the demo ends (exit 1) instead of hanging.
   */
  async step<T>(who: string, what: string, work: Promise<T>, { limitMs = 60_000, everyMs = 5_000 } = {}): Promise<T> {
    const started = performance.now();
    let timer: ReturnType<typeof setInterval> | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setInterval(
        () => {
          const waited = performance.now() - started;
          if (waited >= limitMs) reject(new Error(`${who}: ${what} did not happen within ${Math.round(limitMs / 1000)} s`));
          else this.say(who, `(still waiting: ${what}, ${Math.round(waited / 1000)} s)`);
        },
        Math.min(everyMs, limitMs),
      );
    });
    try {
      return await Promise.race([work, stuck]);
    } finally {
      clearInterval(timer);
    }
  }
}
