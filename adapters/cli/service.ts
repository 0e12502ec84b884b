/**
 * What every long-running command shares: JSON logs on stderr with tokens redacted, process warnings
 * logged as JSON too, one line on stdout once it is ready, and a clean close on SIGTERM or SIGINT (a
 * second signal exits at once: what the logs committed is safe whatever happens next).
 */
import { openSync, readFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { pino, type Logger } from 'pino';
import { newToken } from '../../protocol/index.js';
import { createPrivateFile, exposure, makePrivateFolder } from '../../storage/private-files.js';
import { UsageError, type LogLevel } from './flags.js';

/**
 * JSON lines on stderr, or appended to `file` (0600 in private folders if it is new; refused if others can access it).
 * With `runBytes`, the file holds this run's lines only (emptied first), and at most that many bytes of them.
 */
export function jsonLogger(level: LogLevel, file?: string, runBytes?: number): Logger {
  if (file !== undefined) privateLogFile(file);
  const logger = pino(
    {
      name: 'assistant-relay',
      level,
      redact: {
        paths: ['req.headers.authorization', 'token', '*.token', 'callback.token', 'relay_token', 'client_token'],
        censor: '[redacted]',
      },
    },
    file === undefined
      ? pino.destination({ fd: 2, sync: false })
      : runBytes === undefined
        ? pino.destination({ dest: file, sync: true })
        : boundedRunLog(file, runBytes),
  );
  // Node would print process warnings (deprecations and the like) as plain text on stderr: log them as JSON instead.
  process.removeAllListeners('warning');
  process.on('warning', (warning) => logger.warn({ err: warning }, 'process warning'));
  return logger;
}

/** `file` emptied, then written line by line up to `maxBytes`; past them one line says so and the rest is left out. */
function boundedRunLog(file: string, maxBytes: number): { write(line: string): void } {
  const fd = openSync(file, 'w');
  let written = 0;
  let full = false;
  return {
    write(line) {
      if (full) return;
      written += Buffer.byteLength(line);
      if (written <= maxBytes) return void writeSync(fd, line);
      full = true;
      writeSync(
        fd,
        `${JSON.stringify({ level: 40, time: Date.now(), msg: `this run's log reached its bound of ${maxBytes} bytes: later lines are left out` })}\n`,
      );
    },
  };
}

/** A log file to append to, only its owner's: what the parts log may say more than a stranger should read. */
function privateLogFile(file: string): void {
  makePrivateFolder(dirname(file));
  if (createPrivateFile(file)) return;
  const exposed = exposure([file]);
  if (exposed !== undefined) throw new UsageError(`the log file is not private: ${exposed}`);
}

/** The event log could not commit: memory and log have diverged, so the process exits (70) for a restart to fold the log again. */
export function exitOnFatal(logger: Logger): (error: unknown) => void {
  return (error) => {
    logger.fatal({ err: error }, 'event log write failed; exiting so a restart can fold the log');
    logger.flush();
    process.exit(70);
  };
}

/**
 * Closes on the first SIGTERM or SIGINT, exits at once on a second, and only then says it is ready: a
 * supervisor may signal as soon as it reads the line, and must get a clean close.
 */
export function runUntilSignalled(logger: Logger, ready: Record<string, unknown>, close: () => Promise<void>): void {
  closeOnSignals(logger, close);
  process.stdout.write(`${JSON.stringify(ready)}\n`);
}

/** Closes on the first SIGTERM or SIGINT (exit code 0, or 1 if the close fails), and exits at once on a second. */
export function closeOnSignals(logger: Logger, close: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting without waiting for close');
      logger.flush();
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'closing');
    close().then(
      () => {
        logger.info('closed');
        logger.flush();
        process.exitCode = 0;
      },
      (error: unknown) => {
        logger.error({ err: error }, 'close failed');
        logger.flush();
        process.exitCode = 1;
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/**
 * A token kept in a file: refused if other users can access the file or it is empty. With `create`, a
 * missing file is made with a fresh random token (mode 0600, its missing folders 0700).
 */
export function readTokenFile(file: string, options: { readonly create: boolean }): string {
  if (options.create) {
    makePrivateFolder(dirname(file));
    const fresh = newToken();
    if (createPrivateFile(file, `${fresh}\n`)) return fresh;
  }
  let token: string;
  try {
    const exposed = exposure([file]);
    if (exposed !== undefined) throw new UsageError(`the --token-file is not private: ${exposed}`);
    token = readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new UsageError(`${file} does not exist`);
    throw error;
  }
  if (token.length === 0) throw new UsageError(`${file} is empty`);
  return token;
}
