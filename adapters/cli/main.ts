#!/usr/bin/env node
/**
 * The `assistant-relay` command: one subcommand per part of the system (COMMANDS says which). A server
 * prints exactly one line on stdout when ready, `{"listening":"http://H:PORT"}` (`inspect`:
 * `{"inspecting":"http://H:PORT","db":FILE}`); everything else is structured JSON logging on stderr, tokens redacted.
 */
import { readFileSync } from 'node:fs';
import { packageFile } from '../../protocol/package-files.js';
import { UsageError } from './flags.js';

interface Command {
  readonly run: (argv: readonly string[], env: NodeJS.ProcessEnv) => Promise<void>;
  /** Shown with its usage errors and its `--help`. */
  readonly usage: string;
}

interface Entry {
  /** One line of `assistant-relay --help`. */
  readonly summary: string;
  /**
   * The command, loaded when it runs: a command's start-up is then its own modules' (`replay` does not
   * load the HTTP server, nor `chat` the event log), and `--help` and `--version` load none.
   */
  readonly load: () => Promise<Command>;
}

/** In the order a newcomer meets them: the demo, the chat channel, the reasoning channel, the tools on a log. */
const COMMANDS: Record<string, Entry> = {
  demo: {
    summary: 'the whole system on this machine, walked through by a client (what `npm start` runs)',
    load: () => import('./demo.js').then((m) => ({ run: m.demoCommand, usage: m.DEMO_USAGE })),
  },
  serve: {
    summary: 'run the assistant host: the chat channel, Form A or B, on its event log',
    load: () => import('./serve.js').then((m) => ({ run: m.serveCommand, usage: m.SERVE_USAGE })),
  },
  chat: {
    summary: 'chat with an assistant host from this terminal',
    load: () => import('./chat.js').then((m) => ({ run: m.chatCommand, usage: m.CHAT_USAGE })),
  },
  call: {
    summary: 'play a recorded call into an Insights session and print the insights',
    load: () => import('./call.js').then((m) => ({ run: m.callCommand, usage: m.CALL_USAGE })),
  },
  backend: {
    summary: 'run the backend relay: the reasoning channel between clients and plugins',
    load: () => import('./backend.js').then((m) => ({ run: m.backendCommand, usage: m.BACKEND_USAGE })),
  },
  plugin: {
    summary: "run the assistant plugin: answer its integration's jobs with a reasoner",
    load: () => import('./plugin.js').then((m) => ({ run: m.pluginCommand, usage: m.PLUGIN_USAGE })),
  },
  pair: {
    summary: 'pair a client with an assistant through a backend relay',
    load: () => import('./pair.js').then((m) => ({ run: m.pairCommand, usage: m.PAIR_USAGE })),
  },
  rekey: {
    summary: "rotate a paired client's keys",
    load: () => import('./rekey.js').then((m) => ({ run: m.rekeyCommand, usage: m.REKEY_USAGE })),
  },
  job: {
    summary: 'create, show and cancel reasoning jobs as a client',
    load: () => import('./job.js').then((m) => ({ run: m.jobCommand, usage: m.JOB_USAGE })),
  },
  integrations: {
    summary: 'show what a client can read of its integrations',
    load: () => import('./integrations.js').then((m) => ({ run: m.integrationsCommand, usage: m.INTEGRATIONS_USAGE })),
  },
  conformance: {
    summary: 'check another implementation of a role of the protocol, black-box, rule by rule',
    load: () => import('./conformance.js').then((m) => ({ run: m.conformanceCommand, usage: m.CONFORMANCE_USAGE })),
  },
  replay: {
    summary: "fold an event log and print each session's, task's and job's timeline (--verify checks it)",
    load: () => import('./replay.js').then((m) => ({ run: m.replayCommand, usage: m.REPLAY_USAGE })),
  },
  inspect: {
    summary: "serve a web page of an event log's statecharts, followed live",
    load: () => import('./inspect.js').then((m) => ({ run: m.inspectCommand, usage: m.INSPECT_USAGE })),
  },
};

const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length)) + 2;

/** What `--help` prints: the commands, one line each, then where each one's options are. */
const COMMAND_LIST = `usage: assistant-relay <command> [options]

commands:
${Object.entries(COMMANDS)
  .map(([name, { summary }]) => `  ${name.padEnd(width)}${summary}`)
  .join('\n')}

\`assistant-relay <command> --help\` (or \`assistant-relay help <command>\`) lists a command's options;
\`assistant-relay --version\` prints the version.`;

const isHelp = (word: string | undefined) => word === undefined || word === 'help' || word === '--help' || word === '-h';
const isVersion = (word: string | undefined) => word === '--version' || word === '-v';

function version(): string {
  const url = packageFile('package.json', import.meta.url, 2);
  return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
}

const entryOf = (name: string | undefined) => (name !== undefined && Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined);

async function main(argv: readonly string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (isVersion(command)) {
    process.stdout.write(`${version()}\n`);
    return;
  }
  // `help serve` is `serve --help`.
  const asked = command === 'help' && rest[0] !== undefined && !rest[0].startsWith('-') ? rest[0] : undefined;
  const entry = entryOf(asked ?? command);
  if (entry === undefined) {
    if (isHelp(command) && asked === undefined) {
      process.stdout.write(`${COMMAND_LIST}\n`);
      return;
    }
    const unknown = asked ?? command;
    throw Object.assign(new UsageError(`unknown command ${JSON.stringify(unknown)}`), { usage: COMMAND_LIST });
  }
  const known = await entry.load();
  if (asked !== undefined || rest[0] === '--help' || rest[0] === '-h') {
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
    // main() gives every usage error the usage of its command (or the list of commands).
    process.stderr.write(`assistant-relay: ${error.message}\n${(error as UsageError & { usage: string }).usage}\n`);
    process.exit(2);
  }
  // Same shape as the logger's lines (pino, level 60 = fatal): stderr stays JSON lines.
  // `code`, where the error has one (the event log's own, or the system's), is what a supervisor matches on.
  const code = (error as { code?: unknown } | null)?.code;
  const err =
    error instanceof Error
      ? { type: error.name, ...(code !== undefined ? { code } : {}), message: error.message, stack: error.stack }
      : { message: String(error) };
  process.stderr.write(`${JSON.stringify({ level: 60, time: Date.now(), name: 'assistant-relay', err, msg: 'failed to start' })}\n`);
  process.exit(1);
});
