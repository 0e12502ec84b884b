/**
 * The process warnings a test expects, captured so that it asserts them and CI's log shows none of them.
 * Restored when the test ends.
 */
import { onTestFinished, vi } from 'vitest';

export function captureWarnings(): string[] {
  const warnings: string[] = [];
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation((warning: string | Error) => {
    warnings.push(typeof warning === 'string' ? warning : warning.message);
  });
  onTestFinished(() => spy.mockRestore());
  return warnings;
}
