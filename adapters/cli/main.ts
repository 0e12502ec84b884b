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
import { UsageError } from './flags.js';

interface Command {
  readonly run: (argv: readonly string[], env: NodeJS.ProcessEnv) => Promise<void>;
  /** Shown with its usage errors and its `--help`. */
  readonly usage: string;
}

/**
 * Each command, loaded when it runs: a command's start-up is then its own modules' (`replay` does not
 * load the HTTP server, nor `chat` the event log).
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
  serve: () => import('./serve.js').then((m) => ({ run: m.serveCommand, usage: m.SERVE_USAGE })),
  backend: () => import('./backend.js').then((m) => ({ run: m.backendCommand, usage: m.BACKEND_USAGE })),
  plugin: () => import('./plugin.js').then((m) => ({ run: m.pluginCommand, usage: m.PLUGIN_USAGE })),
  pair: () => import('./pair.js').then((m) => ({ run: m.pairCommand, usage: m.PAIR_USAGE })),
  rekey: () => import('./rekey.js').then((m) => ({ run: m.rekeyCommand, usage: m.REKEY_USAGE })),
  job: () => import('./job.js').then((m) => ({ run: m.jobCommand, usage: m.JOB_USAGE })),
  integrations: () => import('./integrations.js').then((m) => ({ run: m.integrationsCommand, usage: m.INTEGRATIONS_USAGE })),
  chat: () => import('./chat.js').then((m) => ({ run: m.chatCommand, usage: m.CHAT_USAGE })),
  call: () => import('./call.js').then((m) => ({ run: m.callCommand, usage: m.CALL_USAGE })),
  demo: () => import('./demo.js').then((m) => ({ run: m.demoCommand, usage: m.DEMO_USAGE })),
  replay: () => import('./replay.js').then((m) => ({ run: m.replayCommand, usage: m.REPLAY_USAGE })),
  inspect: () => import('./inspect.js').then((m) => ({ run: m.inspectCommand, usage: m.INSPECT_USAGE })),
};

async function allUsage(): Promise<string> {
  const commands = await Promise.all(Object.values(COMMANDS).map((load) => load()));
  return commands.map(({ usage }) => usage).join('\n\n');
}

const isHelp = (word: string | undefined) => word === undefined || word === 'help' || word === '--help' || word === '-h';

async function main(argv: readonly string[]): Promise<void> {
  const [command, ...rest] = argv;
  const load = command === undefined || !Object.hasOwn(COMMANDS, command) ? undefined : COMMANDS[command];
  if (load === undefined) {
    if (isHelp(command)) {
      process.stdout.write(`${await allUsage()}\n`);
      return;
    }
    throw Object.assign(new UsageError(`unknown command ${JSON.stringify(command)}`), { usage: await allUsage() });
  }
  const known = await load();
  if (rest[0] === '--help' || rest[0] === '-h') {
    process.stdout.write(`${known.usage}\n`);
    return;
  }
  try {
    await known.run(rest, process.env);
  } catch (error) {
    throw error instanceof UsageError ? Object.assign(error, { usage: known.usage }) : error;
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    // main() gives every usage error the usage of its command (or of all of them).
    process.stderr.write(`assistant-relay: ${error.message}\n${(error as UsageError & { usage: string }).usage}\n`);
    process.exit(2);
  }
  // Same shape as the logger's lines (pino, level 60 = fatal): stderr stays JSON lines.
  // `code`, where the error has one (the event log's own, or the system's), is what a supervisor matches on.
  const code = (error as { code?: unknown } | null)?.code;
  const err = error instanceof Error ? { type: error.name, ...(code !== undefined ? { code } : {}), message: error.message, stack: error.stack } : { message: String(error) };
  process.stderr.write(`${JSON.stringify({ level: 60, time: Date.now(), name: 'assistant-relay', err, msg: 'failed to start' })}\n`);
  process.exit(1);
});
