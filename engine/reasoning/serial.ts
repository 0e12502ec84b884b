/**
 * Steps that must run one after another (a stream's deliveries and frames, a follower's reads), each
 * once the one before it has settled, in the order they were asked for. A step that fails is reported
 * in the background and the next one still runs.
 */
export class Serial {
  private last: Promise<void> = Promise.resolve();

  constructor(
    private readonly background: (work: Promise<unknown>, what: string) => void,
    /** Names the steps in failure reports. */
    private readonly what: string,
  ) {}

  run(step: () => Promise<void>): void {
    const next = this.last.then(step);
    this.background(next, this.what);
    this.last = next.catch(() => undefined);
  }
}
