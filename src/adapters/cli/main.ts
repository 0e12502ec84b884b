#!/usr/bin/env node
/**
 * The `assistant-relay` command: `serve` runs the host standalone, `backend` the backend relay, `plugin`
 * the assistant plugin; `pair` pairs a client with an assistant through a backend (`rekey` rotates its
 * keys), `chat` talks with a host from a terminal, `call` plays a recorded call into Insights, `job` creates and
 * follows reasoning jobs as a client, `integrations` shows what a client can read of its integration, and
 * `demo` (what `npm start` runs) the whole system on this machine, walked through by a client; `replay` folds an event log
 * and prints each session's, task's, delivery's and job's timeline, and `inspect` serves a web page of a log's statecharts,
 * followed live. A server prints exactly one line on stdout when ready, `{"listening":"http://H:PORT"}`
 * (`inspect`: `{"inspecting":"http://H:PORT","db":FILE}`); everything else is structured JSON logging on stderr, tokens redacted.
 */
import { BUILTIN_AGENTS, insightsAgent } from '../agents/index.js';
import { createAssistantHost } from '../host.js';
import { builtinReasoner } from '../reasoners/index.js';
import { USAGE, parseServeArgs, type ServeOptions } from './args.js';
import { BACKEND_USAGE, backendCommand } from './backend.js';
import { CALL_USAGE, callCommand } from './call.js';
import { CHAT_USAGE, chatCommand } from './chat.js';
import { DEMO_USAGE, demoCommand } from './demo.js';
import { UsageError } from './flags.js';
import { INSPECT_USAGE, inspectCommand } from './inspect.js';
import { INTEGRATIONS_USAGE, integrationsCommand } from './integrations.js';
import { JOB_USAGE, jobCommand } from './job.js';
import { PAIR_USAGE, pairCommand } from './pair.js';
import { REKEY_USAGE, rekeyCommand } from './rekey.js';
import { PLUGIN_USAGE, pluginCommand } from './plugin.js';
import { REPLAY_USAGE, replayCommand } from './replay.js';
import { exitOnFatal, jsonLogger, readTokenFile, runUntilSignalled } from './service.js';

/** The token from --token, or from --token-file (created with a fresh random token on first use). */
function resolveToken(options: ServeOptions): string {
  return options.token ?? readTokenFile(options.tokenFile!, { create: true });
}

async function serve(argv: readonly string[]): Promise<void> {
  const options = parseServeArgs(argv, process.env);
  const token = resolveToken(options);
  const logger = jsonLogger(options.logLevel);
  const host = await createAssistantHost({
    db: options.db,
    token,
    agent: options.insights === 'builtin' ? insightsAgent(builtinReasoner({ providerKind: 'assistant-relay' }), BUILTIN_AGENTS[options.agent]) : options.agent,
    form: options.form,
    callbackAllowlist: options.callbackAllowlist,
    corsOrigins: options.corsOrigins,
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
    ...(options.retentionMs !== undefined ? { retentionMs: options.retentionMs } : {}),
    onFatal: exitOnFatal(logger),
  });
  const url = await host.listen({ host: options.host, port: options.port });
  logger.info({ url, db: options.db, agent: options.agent, insights: options.insights, form: options.form, callback_allowlist: options.callbackAllowlist, callback_loopback: options.callbackLoopback, callback_loopback_ports: options.callbackLoopbackPorts, cors_origins: options.corsOrigins, epoch: host.epoch }, 'serving');
  runUntilSignalled(logger, { listening: url }, () => host.close());
}

/** Each command, and the usage shown with its usage errors and its `--help`. */
const COMMANDS: Record<string, { readonly run: (argv: readonly string[]) => Promise<void>; readonly usage: string }> = {
  serve: { run: serve, usage: USAGE },
  backend: { run: (argv) => backendCommand(argv, process.env), usage: BACKEND_USAGE },
  plugin: { run: (argv) => pluginCommand(argv, process.env), usage: PLUGIN_USAGE },
  pair: { run: (argv) => pairCommand(argv, process.env), usage: PAIR_USAGE },
  rekey: { run: (argv) => rekeyCommand(argv, process.env), usage: REKEY_USAGE },
  job: { run: (argv) => jobCommand(argv, process.env), usage: JOB_USAGE },
  integrations: { run: (argv) => integrationsCommand(argv, process.env), usage: INTEGRATIONS_USAGE },
  chat: { run: (argv) => chatCommand(argv, process.env), usage: CHAT_USAGE },
  call: { run: (argv) => callCommand(argv, process.env), usage: CALL_USAGE },
  demo: { run: (argv) => demoCommand(argv, process.env), usage: DEMO_USAGE },
  replay: { run: (argv) => replayCommand(argv, process.env), usage: REPLAY_USAGE },
  inspect: { run: (argv) => inspectCommand(argv, process.env), usage: INSPECT_USAGE },
};

const ALL_USAGE = Object.values(COMMANDS).map(({ usage }) => usage).join('\n\n');

const isHelp = (word: string | undefined) => word === undefined || word === 'help' || word === '--help' || word === '-h';

async function main(argv: readonly string[]): Promise<void> {
  const [command, ...rest] = argv;
  const known = command === undefined ? undefined : COMMANDS[command];
  if (known === undefined) {
    if (isHelp(command)) {
      process.stdout.write(`${ALL_USAGE}\n`);
      return;
    }
    throw Object.assign(new UsageError(`unknown command ${JSON.stringify(command)}`), { usage: ALL_USAGE });
  }
  if (rest[0] === '--help' || rest[0] === '-h') {
    process.stdout.write(`${known.usage}\n`);
    return;
  }
  try {
    await known.run(rest);
  } catch (error) {
    throw error instanceof UsageError ? Object.assign(error, { usage: known.usage }) : error;
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    process.stderr.write(`assistant-relay: ${error.message}\n${(error as UsageError & { usage?: string }).usage ?? USAGE}\n`);
    process.exit(2);
  }
  // Same shape as the logger's lines (pino, level 60 = fatal): stderr stays JSON lines.
  // `code`, where the error has one (the event log's own, or the system's), is what a supervisor matches on.
  const code = (error as { code?: unknown } | null)?.code;
  const err = error instanceof Error ? { type: error.name, ...(code !== undefined ? { code } : {}), message: error.message, stack: error.stack } : { message: String(error) };
  process.stderr.write(`${JSON.stringify({ level: 60, time: Date.now(), name: 'assistant-relay', err, msg: 'failed to start' })}\n`);
  process.exit(1);
});
