/**
 * The `command` reasoner: runs a program of the operator's (an argv array, no shell) once per job, writes
 * the prompt (prompt.ts) to its stdin as JSON, and takes one JSON object from its stdout as the result. Exit
 * status 0 is success; otherwise the tail of its stderr says why. At the deadline, or when the plugin stops,
 * its process group gets SIGTERM, then SIGKILL if it is still there after a grace period. The job settles
 * once the program has exited and its process group has no live member left (what is left gets SIGKILL),
 * so no job leaves a process behind.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { systemClock, type Clock } from '../../engine/core/clock.js';
import { ReasonerError, type Reasoner } from './reasoner.js';
import { jobEnd } from './deadline.js';
import { promptOf } from './prompt.js';
import { clip, conformingResult } from './result.js';

export interface CommandReasonerOptions {
  /** The program and its arguments, e.g. `['python3', 'reason.py']`. */
  readonly argv: readonly [string, ...string[]];
  /** Between SIGTERM and SIGKILL (default 2 s). */
  readonly killGraceMs?: number;
  /** Bound on stdout (default 4 MiB): more fails the job. */
  readonly maxOutputBytes?: number;
  readonly clock?: Clock;
}

/** How often, and how long at most, to look for what the program left in its process group. */
const GROUP_POLL_MS = 10;
const GROUP_WAIT_MS = 2_000;

/**
 * Once the program has exited: SIGKILL whatever it left in its process group (a killed shell's children
 * are still dying; a daemon it started must not outlive the job), and resolve when the group is gone.
 */
function afterGroup(pgid: number, clock: Clock): Promise<void> {
  if (!groupAlive(pgid)) return Promise.resolve();
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // Gone in between.
  }
  const until = clock.now() + GROUP_WAIT_MS;
  return new Promise((resolve) => {
    const look = () => (!groupAlive(pgid) || clock.now() >= until ? resolve() : clock.setTimeout(look, GROUP_POLL_MS));
    look();
  });
}

/**
 * Whether the process group still has a live member. A zombie does not count: once killed, what the
 * program started is reaped by whoever adopted it, which may take its time (or, under a pid 1 that does
 * not reap, never come).
 */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  if (process.platform !== 'linux') return true;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // After the parenthesised command name: state, ppid, pgrp.
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z') return true;
    } catch {
      // Gone while we looked.
    }
  }
  return false;
}

/** How much of stderr is kept for the error message: its end, where programs say what went wrong. */
const STDERR_TAIL = 1_000;

export function commandReasoner({
  argv,
  killGraceMs = 2_000,
  maxOutputBytes = 4 * 1024 * 1024,
  clock = systemClock,
}: CommandReasonerOptions): Reasoner {
  const [program, ...args] = argv;
  return {
    name: 'command',
    reason(request) {
      const end = jobEnd(request, clock);
      if (end.signal.aborted) {
        end.dispose();
        return Promise.reject(end.failure());
      }
      return new Promise<Record<string, unknown>>((resolve, reject) => {
        // Its own process group, so that the kill reaches whatever it started too (a shell script's children).
        const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
        const stdout: Buffer[] = [];
        let stdoutBytes = 0;
        let stderr = '';
        let overflow = false;
        let killTimer: unknown;
        const signalGroup = (signal: NodeJS.Signals) => {
          try {
            process.kill(-child.pid!, signal);
          } catch {
            // Already gone (ESRCH).
          }
        };
        const stop = () => {
          signalGroup('SIGTERM');
          killTimer = clock.setTimeout(() => signalGroup('SIGKILL'), killGraceMs);
        };
        const settle = (outcome: () => Record<string, unknown>) => {
          end.signal.removeEventListener('abort', stop);
          clock.clearTimeout(killTimer);
          end.dispose();
          try {
            resolve(outcome());
          } catch (error) {
            reject(error);
          }
        };
        child.on('error', (error: NodeJS.ErrnoException) => {
          // Only a program that could not start reports here without a later 'close'.
          if (child.pid === undefined) {
            settle(() => {
              throw new ReasonerError('reasoner_unavailable', `could not start ${program}: ${error.code ?? error.message}`, {
                cause: error,
              });
            });
          }
        });
        if (child.pid === undefined) return;
        end.signal.addEventListener('abort', stop, { once: true });
        child.stdout!.on('data', (chunk: Buffer) => {
          stdoutBytes += chunk.length;
          if (stdoutBytes > maxOutputBytes) {
            if (!overflow) signalGroup('SIGKILL');
            overflow = true;
          } else stdout.push(chunk);
        });
        child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-STDERR_TAIL)));
        // A program that exits without reading its stdin makes this write fail (EPIPE); its exit status tells the rest.
        child.stdin!.on('error', () => {});
        child.stdin!.end(JSON.stringify(promptOf(request)));
        child.on(
          'close',
          (code, signal) =>
            void afterGroup(child.pid!, clock).then(() =>
              settle(() => {
                if (end.signal.aborted) throw end.failure();
                if (overflow) throw new ReasonerError('invalid_result', `${program} wrote more than ${maxOutputBytes} bytes to stdout`);
                const said = stderr.trim() === '' ? '' : `: ${clip(stderr.trim(), STDERR_TAIL)}`;
                if (code !== 0)
                  throw new ReasonerError(
                    'reasoner_error',
                    `${program} ${signal ? `was killed by ${signal}` : `exited with status ${code}`}${said}`,
                  );
                let result: unknown;
                try {
                  result = JSON.parse(Buffer.concat(stdout).toString('utf8'));
                } catch (error) {
                  throw new ReasonerError(
                    'invalid_result',
                    `${program} did not write one JSON object to stdout: ${(error as Error).message}`,
                  );
                }
                return conformingResult(request.response_schema, result);
              }),
            ),
        );
      });
    },
  };
}
