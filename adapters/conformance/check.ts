/**
 * What the conformance kit is made of: a check is one rule of the spec (or of PROTOCOL.md, where the spec
 * leaves the rule open), run black-box against another implementation of a role; it passes, or it
 * fails with a `RuleBroken` that says what was seen against what the rule asks.
 */

/**
 * What a check may need of the implementation besides the role itself; a check whose needs are not
 * declared is skipped. `script-agent`: a host runs the script test agent; `byo`: a plugin pairs by a code.
 */
export type Need = 'script-agent' | 'byo';

export interface Check<C> {
  /** Stable, for `--only` and `--skip`: `form-a.open`. */
  readonly id: string;
  /** The rule, as the spec numbers it (`4.2 GET /v1/events rule 5`) or PROTOCOL.md's row (`PROTOCOL.md 4.1`). */
  readonly spec: string;
  /** What the implementation must do, in a line. */
  readonly title: string;
  readonly needs?: readonly Need[];
  readonly run: (context: C, scope: CheckScope) => Promise<void>;
}

/** What a check holds open: closed when it ends, however it ends. */
export interface CheckScope {
  /** Runs `close` when the check ends (last deferred first). */
  defer(close: () => unknown): void;
  /** Aborts when the check's time is up. */
  readonly signal: AbortSignal;
}

/** A rule the implementation broke: the check's failure, as opposed to the kit's own trouble. */
export class RuleBroken extends Error {}

/** Fails the check, saying `seen`, unless `holds`. */
export function rule(holds: boolean, seen: string): asserts holds {
  if (!holds) throw new RuleBroken(seen);
}

export type CheckOutcome = 'passed' | 'failed' | 'skipped';

export interface CheckResult {
  readonly id: string;
  readonly spec: string;
  readonly title: string;
  readonly outcome: CheckOutcome;
  /** Why it failed or was skipped. */
  readonly reason?: string;
  readonly ms: number;
}

/** A value as a check's message shows it: JSON, cut to a line's worth. */
export function shown(value: unknown, max = 200): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
