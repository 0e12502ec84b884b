/**
 * Reasoners by name, for the plugin's command line: `reasonerFrom(name, options, env)` checks the flags
 * that name needs (and refuses those it does not use), with a usage error that says what to pass.
 * `REASONER_FLAGS` and `REASONER_USAGE` are the flags' definitions (for `node:util` parseArgs) and help text.
 */
import { z } from 'zod';
import type { Reasoner } from './reasoner.js';
import { UsageError } from '../usage-error.js';
import { builtinReasoner } from './builtin.js';
import { commandReasoner } from './command.js';
import { openAiReasoner } from './openai.js';
import type { ProfileLimits } from './profile.js';

export { builtinReasoner, commandReasoner, openAiReasoner };
export { conformingResult, reasonerResultProblems } from './result.js';

export const REASONER_NAMES = ['builtin', 'openai', 'command'] as const;
export type ReasonerName = (typeof REASONER_NAMES)[number];

export const REASONER_FLAGS = {
  'openai-base-url': { type: 'string' },
  'openai-model': { type: 'string' },
  'openai-key-env': { type: 'string' },
  'openai-stream': { type: 'string' },
  command: { type: 'string' },
} as const;
export type ReasonerFlag = keyof typeof REASONER_FLAGS;

/** The flags each reasoner takes; any other reasoner flag given with it is a usage error. */
const FLAGS_OF: Record<ReasonerName, readonly ReasonerFlag[]> = {
  builtin: [],
  openai: ['openai-base-url', 'openai-model', 'openai-key-env', 'openai-stream'],
  command: ['command'],
};

export const REASONER_USAGE = `reasoners (--reasoner NAME, default builtin):
  builtin                  answers every purpose from its payload alone, deterministically (tests, demos)
  openai                   an OpenAI-compatible chat-completions server (Ollama, vLLM, llama.cpp, hosted APIs):
    --openai-base-url URL  e.g. http://127.0.0.1:11434/v1 (or OPENAI_BASE_URL); /chat/completions is added
    --openai-model M       the model to ask (or OPENAI_MODEL)
    --openai-key-env NAME  the environment variable holding the API key (default OPENAI_API_KEY; none needed
                           by a local server)
    --openai-stream on|off ask for streamed answers (default off)
  command                  a program run once per job: the prompt as JSON on stdin, the result as JSON on stdout
    --command ARGV         the program and its arguments as a JSON array, e.g. '["python3","reason.py"]'`;

export interface ReasonerOptions {
  /** The plugin's provider, named in capability profiles. */
  readonly providerKind: string;
  /** The reasoner flags as given (values of `REASONER_FLAGS`). */
  readonly flags?: Partial<Record<ReasonerFlag, string | undefined>>;
  /** For capability profiles: the plugin's own limits. */
  readonly limits?: ProfileLimits;
}

const Argv = z.array(z.string().min(1)).min(1);

/** A header value: visible ASCII only, so a key can never split a header or smuggle another one. */
const HEADER_SAFE = /^[\x21-\x7e]+$/;

export function reasonerFrom(name: string, options: ReasonerOptions, env: NodeJS.ProcessEnv): Reasoner {
  if (!(REASONER_NAMES as readonly string[]).includes(name))
    throw new UsageError(`--reasoner must be one of ${REASONER_NAMES.join(', ')}, not ${JSON.stringify(name)}`);
  const reasoner = name as ReasonerName;
  const flags = options.flags ?? {};
  for (const flag of Object.keys(flags) as ReasonerFlag[]) {
    if (flags[flag] !== undefined && !FLAGS_OF[reasoner].includes(flag)) {
      const owner = REASONER_NAMES.find((other) => FLAGS_OF[other].includes(flag));
      throw new UsageError(`--${flag} is for --reasoner ${owner ?? '?'}, not ${reasoner}`);
    }
  }
  const profile = { providerKind: options.providerKind, ...(options.limits ? { limits: options.limits } : {}) };
  switch (reasoner) {
    case 'builtin':
      return builtinReasoner(profile);
    case 'openai':
      return openAiReasoner({ ...profile, ...openAiFlags(flags, env) });
    case 'command':
      return commandReasoner({ argv: commandArgv(flags.command) });
  }
}

function openAiFlags(flags: Partial<Record<ReasonerFlag, string | undefined>>, env: NodeJS.ProcessEnv) {
  const baseUrl = flags['openai-base-url'] ?? env.OPENAI_BASE_URL;
  if (baseUrl === undefined || baseUrl === '')
    throw new UsageError('--openai-base-url (or OPENAI_BASE_URL) is required, e.g. http://127.0.0.1:11434/v1 for Ollama');
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new UsageError(`--openai-base-url must be an absolute URL, not ${JSON.stringify(baseUrl)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('--openai-base-url must be http or https');
  if (url.username !== '' || url.password !== '')
    throw new UsageError('--openai-base-url must not carry credentials: put the key in OPENAI_API_KEY or --openai-key-env');
  if (url.search !== '' || url.hash !== '') throw new UsageError('--openai-base-url is a base URL: no query string or fragment');
  const model = flags['openai-model'] ?? env.OPENAI_MODEL;
  if (model === undefined || model === '') throw new UsageError('--openai-model (or OPENAI_MODEL) is required, e.g. llama3.2');
  const keyEnv = flags['openai-key-env'];
  if (keyEnv !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(keyEnv))
    throw new UsageError('--openai-key-env must be the name of an environment variable');
  const apiKey = env[keyEnv ?? 'OPENAI_API_KEY'];
  if (keyEnv !== undefined && (apiKey === undefined || apiKey === ''))
    throw new UsageError(`--openai-key-env names ${keyEnv}, which is not set`);
  // Never echo the key: the message names the variable only.
  if (apiKey !== undefined && apiKey !== '' && !HEADER_SAFE.test(apiKey))
    throw new UsageError(`the API key in ${keyEnv ?? 'OPENAI_API_KEY'} has characters a header cannot carry`);
  const stream = flags['openai-stream'] ?? 'off';
  if (stream !== 'on' && stream !== 'off') throw new UsageError('--openai-stream must be on or off');
  return { baseUrl: url.href, model, apiKey: apiKey || undefined, stream: stream === 'on' };
}

function commandArgv(text: string | undefined): [string, ...string[]] {
  if (text === undefined) throw new UsageError(`--command is required with --reasoner command, e.g. --command '["python3","reason.py"]'`);
  let argv: unknown;
  try {
    argv = JSON.parse(text);
  } catch {
    throw new UsageError('--command must be a JSON array of strings, e.g. \'["python3","reason.py"]\'');
  }
  const parsed = Argv.safeParse(argv);
  if (!parsed.success)
    throw new UsageError('--command must be a JSON array of one or more non-empty strings: the program, then its arguments');
  return parsed.data as [string, ...string[]];
}
