/**
 * Runs a role's checks one after another, each within its time, and says how each went. Which run:
 * `only` and `skip` name checks by id (`form-a.open`) or by the section their rule is in (`4.2`, `7`,
 * `PROTOCOL.md 4`), a prefix of the check's `spec`, and a check left out is not reported; a check whose
 * needs were not declared is reported skipped.
 */
import { RuleBroken, type Check, type CheckResult, type Need } from './check.js';

export interface Selection {
  readonly only?: readonly string[];
  readonly skip?: readonly string[];
  /** What the implementation declared it has (`--script-agent`). */
  readonly has: ReadonlySet<Need>;
  /** Each check's time; past it, it fails. */
  readonly timeoutMs: number;
}

/** Whether `check` is named by `pattern`: its id, or a section its rule is in (a whole number, `4.2` names `4.2` and `4.2.1`, not `4.20`). */
export function names(pattern: string, check: Pick<Check<unknown>, 'id' | 'spec'>): boolean {
  if (check.id === pattern || check.id.startsWith(`${pattern}.`)) return true;
  return check.spec === pattern || (check.spec.startsWith(pattern) && /^[ .]/.test(check.spec.slice(pattern.length)));
}

export async function runChecks<C>(
  checks: readonly Check<C>[],
  context: C,
  selection: Selection,
  onResult: (result: CheckResult) => void = () => {},
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const check of checks.filter((each) => chosen(each, selection))) {
    const result = await runOne(check, context, selection);
    results.push(result);
    onResult(result);
  }
  return results;
}

/** Whether `only` and `skip` leave `check` in the run (one left out is not reported at all). */
function chosen(check: Pick<Check<unknown>, 'id' | 'spec'>, selection: Selection): boolean {
  return (
    (selection.only === undefined || selection.only.some((pattern) => names(pattern, check))) &&
    !(selection.skip ?? []).some((pattern) => names(pattern, check))
  );
}

async function runOne<C>(check: Check<C>, context: C, selection: Selection): Promise<CheckResult> {
  const base = { id: check.id, spec: check.spec, title: check.title };
  const missing = (check.needs ?? []).filter((need) => !selection.has.has(need));
  if (missing.length > 0) return { ...base, outcome: 'skipped', reason: `needs ${missing.map((need) => `--${need}`).join(', ')}`, ms: 0 };

  const closers: (() => unknown)[] = [];
  const timeout = AbortSignal.timeout(selection.timeoutMs);
  const started = performance.now();
  let reason: string | undefined;
  try {
    await Promise.race([
      check.run(context, { defer: (close) => closers.push(close), signal: timeout }),
      new Promise((_, reject) =>
        timeout.addEventListener('abort', () => reject(new RuleBroken(`no outcome within ${selection.timeoutMs} ms`)), { once: true }),
      ),
    ]);
  } catch (error) {
    reason = error instanceof RuleBroken ? error.message : `the check could not run: ${(error as Error).message ?? String(error)}`;
  } finally {
    for (const close of closers.reverse()) {
      try {
        await close();
      } catch {
        // A stream the implementation already closed: nothing left to close.
      }
    }
  }
  const ms = performance.now() - started;
  return reason === undefined ? { ...base, outcome: 'passed', ms } : { ...base, outcome: 'failed', reason, ms };
}
