/** Waiting in tests for what happens elsewhere (another process, a socket, a store): polling, with a limit that names what never came. */

export interface WaitOptions {
  /** Default 10 s. */
  readonly timeoutMs?: number;
  /** Default 20 ms. */
  readonly everyMs?: number;
}

/** Reads until `done` holds of what `read` gives, and resolves with it; fails after the limit with the last value read. */
export async function eventually<T>(
  what: string,
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  options: WaitOptions = {},
): Promise<T> {
  const { timeoutMs = 10_000, everyMs = 20 } = options;
  for (const since = Date.now(); ; await new Promise((resolve) => setTimeout(resolve, everyMs))) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() - since > timeoutMs)
      throw new Error(`still waiting for ${what}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
  }
}

/** Waits until `condition` holds. */
export async function waitFor(what: string, condition: () => boolean, options: WaitOptions = {}): Promise<void> {
  await eventually(what, condition, (held) => held, options);
}
