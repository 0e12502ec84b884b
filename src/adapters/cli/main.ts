#!/usr/bin/env node
/**
 * `assistant-relay serve`: runs the host standalone. Prints exactly one line on stdout when ready,
 * `{"listening":"http://H:PORT"}`; everything else is structured JSON logging on stderr, tokens redacted.
 */
import { newToken } from '../../protocol/index.js';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { pino } from 'pino';
import { createAssistantHost } from '../host.js';
import { createPrivateFile, exposure, makePrivateFolder } from '../../storage/private-files.js';
import { USAGE, UsageError, parseServeArgs, type ServeOptions } from './args.js';

/**
 * The token from --token, or from --token-file: created with a fresh random token on first use (mode
 * 0600, its missing folders 0700), refused if other users can access it.
 */
function resolveToken(options: ServeOptions): string {
  if (options.token !== undefined) return options.token;
  const file = options.tokenFile!;
  makePrivateFolder(dirname(file));
  const fresh = newToken();
  if (createPrivateFile(file, `${fresh}\n`)) return fresh;
  const exposed = exposure([file]);
  if (exposed !== undefined) throw new UsageError(`the --token-file is not private: ${exposed}`);
  const token = readFileSync(file, 'utf8').trim();
  if (token.length === 0) throw new UsageError(`${file} is empty`);
  return token;
}

async function serve(argv: readonly string[]): Promise<void> {
  const options = parseServeArgs(argv, process.env);
  const token = resolveToken(options);
  const logger = pino(
    {
      name: 'assistant-relay',
      level: options.logLevel,
      redact: { paths: ['req.headers.authorization', 'token', '*.token', 'callback.token'], censor: '[redacted]' },
    },
    pino.destination({ fd: 2, sync: false }),
  );
  // Node would print process warnings (deprecations and the like) as plain text on stderr: log them as JSON instead.
  process.removeAllListeners('warning');
  process.on('warning', (warning) => logger.warn({ err: warning }, 'process warning'));
  const host = await createAssistantHost({
    db: options.db,
    token,
    agent: options.agent,
    form: options.form,
    callbackAllowlist: options.callbackAllowlist,
    callbackLoopback: options.callbackLoopback,
    ...(options.callbackLoopbackPorts !== undefined ? { callbackLoopbackPorts: options.callbackLoopbackPorts } : {}),
    synchronous: options.synchronous,
    logger,
    ...(options.keepaliveMs !== undefined ? { keepaliveMs: options.keepaliveMs } : {}),
    ...(options.maxReaders !== undefined ? { maxReadersPerSession: options.maxReaders } : {}),
    ...(options.maxStreams !== undefined ? { maxStreams: options.maxStreams } : {}),
    ...(options.headersTimeoutMs !== undefined ? { headersTimeoutMs: options.headersTimeoutMs } : {}),
    ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    ...(options.connectionIdleTimeoutMs !== undefined ? { connectionIdleTimeoutMs: options.connectionIdleTimeoutMs } : {}),
    ...(options.sessionIdleTtlMs !== undefined ? { sessionIdleTtlMs: options.sessionIdleTtlMs } : {}),
    onFatal: (error) => {
      logger.fatal({ err: error }, 'event log write failed; exiting so a restart can fold the log');
      logger.flush();
      process.exit(70);
    },
  });
  const url = await host.listen({ host: options.host, port: options.port });
  logger.info({ url, db: options.db, agent: options.agent, form: options.form, callback_allowlist: options.callbackAllowlist, callback_loopback: options.callbackLoopback, callback_loopback_ports: options.callbackLoopbackPorts, epoch: host.epoch }, 'serving');
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      // A second signal means "now": the log's committed batches are safe whatever happens next.
      logger.warn({ signal }, 'second signal: exiting without waiting for close');
      logger.flush();
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'closing');
    host.close().then(
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
  // Only now: a supervisor may signal as soon as it reads this line, and must get a clean close.
  process.stdout.write(`${JSON.stringify({ listening: url })}\n`);
}

async function main(argv: readonly string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === 'serve') return serve(rest);
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  throw new UsageError(`unknown command ${JSON.stringify(command)}`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    process.stderr.write(`assistant-relay: ${error.message}\n${USAGE}\n`);
    process.exit(2);
  }
  // Same shape as the logger's lines (pino, level 60 = fatal): stderr stays JSON lines.
  // `code`, where the error has one (the event log's own, or the system's), is what a supervisor matches on.
  const code = (error as { code?: unknown } | null)?.code;
  const err = error instanceof Error ? { type: error.name, ...(code !== undefined ? { code } : {}), message: error.message, stack: error.stack } : { message: String(error) };
  process.stderr.write(`${JSON.stringify({ level: 60, time: Date.now(), name: 'assistant-relay', err, msg: 'failed to start' })}\n`);
  process.exit(1);
});
