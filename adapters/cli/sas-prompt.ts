/**
 * How `pair` and `plugin --pairing-code` confirm the short authentication string (PROTOCOL.md 7.7): the
 * person at the terminal is asked whether the other side shows the same string, and the pairing goes on
 * only on a yes; anything else (a no, Ctrl-C, end of input) aborts it. `--yes` skips the question, for
 * scripts: such a pairing is not checked against a relay in the middle. With neither a terminal on stdin
 * nor `--yes`, the command refuses before it pairs: no one could answer.
 */
import { createInterface } from 'node:readline/promises';
import type { ConfirmSas } from '../client/pairing.js';
import { UsageError } from './flags.js';

export const YES_USAGE = `  --yes                    do not ask whether both sides show the same short authentication string:
                           for scripts; the pairing is then not checked against a relay in the middle`;

/** The confirmation step of a command; `other` names the other side in the question. */
export function sasConfirmation(yes: boolean, other: string): ConfirmSas {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  if (yes) {
    return (sas) => {
      say(`Short authentication string: ${sas} (not compared with ${other}'s: --yes)`);
      return true;
    };
  }
  if (process.stdin.isTTY !== true) {
    throw new UsageError(
      `a person must confirm that both sides show the same short authentication string, and stdin is not a terminal: run this on one, or pass --yes to skip the check`,
    );
  }
  return async (sas, pairingEnded) => {
    const terminal = createInterface({ input: process.stdin, output: process.stderr });
    const gone = new AbortController();
    // Ctrl-C and the end of input are a no, not a question left hanging.
    terminal.on('SIGINT', () => gone.abort());
    terminal.on('close', () => gone.abort());
    try {
      const answer = await terminal.question(`Short authentication string: ${sas}\nDoes ${other} show ${sas} too? [y/N] `, {
        signal: AbortSignal.any([pairingEnded, gone.signal]),
      });
      return /^\s*y(es)?\s*$/i.test(answer);
    } catch {
      return false;
    } finally {
      terminal.close();
    }
  };
}
