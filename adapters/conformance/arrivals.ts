/** Waiting for something to arrive, or for a time to pass: what the kit's stream reader and callback listener share. */
export class Arrivals {
  private readonly waiting = new Set<() => void>();

  /** Resolves at the next `arrived()`, or after `ms`. */
  next(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiting.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.waiting.add(wake);
    });
  }

  /** Wakes everything waiting. */
  arrived(): void {
    for (const wake of [...this.waiting]) wake();
  }
}
