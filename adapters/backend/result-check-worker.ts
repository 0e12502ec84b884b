/**
 * The thread a costly result check runs in (result-checks.ts): once its modules are loaded it says it is
 * ready, then answers each `{schema, result}` with the check's problem, one at a time. The schemas it
 * compiled stay cached between checks (response-schema.ts), so a job's schema compiles once per thread.
 */
import { parentPort } from 'node:worker_threads';
import { problemsOf } from '../../engine/reasoning/result-check.js';

/** What the thread answers: ready; a check's problem (`undefined`: the result conforms); or a failure of ours, not the result's. */
export type CheckerMessage = { readonly ready: true } | { readonly problem: string | undefined } | { readonly failed: string };

const port = parentPort!;
const say = (message: CheckerMessage) => port.postMessage(message);
port.on('message', ({ schema, result }: { schema: Record<string, unknown>; result: unknown }) => {
  try {
    say({ problem: problemsOf(schema, result) });
  } catch (error) {
    say({ failed: error instanceof Error ? error.message : String(error) });
  }
});
say({ ready: true });
