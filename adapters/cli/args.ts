/**
 * `assistant-relay serve` flags. Every flag can also come from `ASSISTANT_RELAY_<FLAG>` (dashes as
 * underscores, upper case); a flag on the command line wins.
 */
import { parseAllowlist } from '../../protocol/callback-url.js';
import { parsePortRanges, type PortRange } from '../../protocol/port-ranges.js';
import type { Form } from '../../machines/chat/events.js';
import { BUILTIN_AGENTS, type BuiltinAgentName } from '../agents/index.js';
import { httpLimits } from '../http/limits.js';
import { UsageError, integer, logLevelOf, parseDuration, parseOrigins, readFlags, retentionOf, type LogLevel } from './flags.js';

export interface ServeOptions {
  readonly host: string;
  readonly port: number;
  readonly db: string;
  readonly token: string | undefined;
  readonly tokenFile: string | undefined;
  readonly agent: BuiltinAgentName;
  /** Answers `insights:` sessions through this reasoner (`builtin`), or leaves them to the agent. */
  readonly insights: 'builtin' | 'off';
  readonly form: Form;
  readonly callbackAllowlist: readonly string[];
  readonly corsOrigins: readonly string[];
  readonly callbackLoopback: boolean;
  /** Undefined: every port. */
  readonly callbackLoopbackPorts: readonly PortRange[] | undefined;
  readonly keepaliveMs: number | undefined;
  readonly maxReaders: number | undefined;
  readonly maxStreams: number | undefined;
  readonly headersTimeoutMs: number | undefined;
  readonly requestTimeoutMs: number | undefined;
  readonly connectionIdleTimeoutMs: number | undefined;
  readonly sessionIdleTtlMs: number | undefined;
  /** `Infinity` for `off`. */
  readonly retentionMs: number | undefined;
  readonly synchronous: 'normal' | 'full';
  readonly logLevel: LogLevel;
}

export const USAGE = `usage: assistant-relay serve [options]
  --host H                 address to listen on (default 127.0.0.1)
  --port P                 port; 0 picks a free one (default 8787)
  --db FILE                SQLite event log (default data/assistant-relay.db)
  --token T                bearer token clients must present
  --token-file FILE        read the token from FILE, creating it with a random token if absent
  --agent echo|script|approvals
                           built-in agent (default echo)
  --insights builtin|off   answer insights: sessions with a live analysis by the builtin reasoner
                           (default off: the agent answers them)
  --form A|B               chat channel form of new sessions: A, tasks and a reply stream;
                           B, a conversation posted to the client's callback (default A)
  --callback-allowlist O   callback origins allowed besides loopback, comma-separated,
                           e.g. https://desktop.example.com,http://10.1.2.3:8080
  --callback-loopback on|off
                           loopback callback URLs allowed without an allowlist entry (default on)
  --callback-loopback-ports P
                           ...on these ports only, e.g. 8080,9000-9100 (default any port)
  --cors-origin O          browser origins whose pages may call the host, comma-separated, e.g.
                           https://app.example,http://localhost:5173 (default none)
  --keepalive-ms N         keep-alive comment interval on idle streams (default 20000)
  --max-readers N          live readers per session before 429 (default 4)
  --max-streams N          open streams in the process, all sessions, before 503 (default 512)
  --headers-timeout D      a request's headers must arrive within D, else 408 (default 10s)
  --request-timeout D      a whole request, body included, within D, else 408 (default 30s)
  --connection-idle-timeout D
                           close a kept-alive connection idle this long between requests (default 5s)
  --session-idle-ttl D     end sessions idle this long: 500ms, 90s, 30m, 24h (default 24h)
  --retention D|off        forget sessions ended longer ago than D and remove their events from the
                           log, e.g. 7d, 12h (default 7d); off keeps everything
  --durability normal|full fsync every commit with full (default normal)
  --log-level L            fatal, error, warn, info, debug (one line per request), trace, silent (default info)
Each flag may also be set as ASSISTANT_RELAY_<FLAG>, e.g. ASSISTANT_RELAY_MAX_READERS=8.`;

const FLAGS = {
  host: { type: 'string' },
  port: { type: 'string' },
  db: { type: 'string' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  agent: { type: 'string' },
  insights: { type: 'string' },
  form: { type: 'string' },
  'callback-allowlist': { type: 'string' },
  'callback-loopback': { type: 'string' },
  'callback-loopback-ports': { type: 'string' },
  'cors-origin': { type: 'string' },
  'keepalive-ms': { type: 'string' },
  'max-readers': { type: 'string' },
  'max-streams': { type: 'string' },
  'headers-timeout': { type: 'string' },
  'request-timeout': { type: 'string' },
  'connection-idle-timeout': { type: 'string' },
  'session-idle-ttl': { type: 'string' },
  retention: { type: 'string' },
  durability: { type: 'string' },
  'log-level': { type: 'string' },
} as const;

type Flag = keyof typeof FLAGS;

/** Connection time limits are meant in seconds; an hour is already far past any use, and far below Node's timer range. */
const CONNECTION_LIMIT_MAX_MS = 3_600_000;

export function parseServeArgs(argv: readonly string[], env: NodeJS.ProcessEnv): ServeOptions {
  const get = readFlags(argv, FLAGS, env);
  const agent = get('agent') ?? 'echo';
  if (!(agent in BUILTIN_AGENTS)) throw new UsageError(`--agent must be one of ${Object.keys(BUILTIN_AGENTS).join(', ')}`);
  const insights = get('insights') ?? 'off';
  if (insights !== 'builtin' && insights !== 'off') throw new UsageError('--insights must be builtin or off');
  const form = get('form') ?? 'A';
  if (form !== 'A' && form !== 'B') throw new UsageError('--form must be A or B');
  let callbackAllowlist: string[];
  try {
    callbackAllowlist = parseAllowlist(get('callback-allowlist') ?? '');
  } catch (error) {
    throw new UsageError(`--callback-allowlist: ${(error as Error).message}`);
  }
  const loopback = get('callback-loopback') ?? 'on';
  if (loopback !== 'on' && loopback !== 'off') throw new UsageError('--callback-loopback must be on or off');
  const ports = get('callback-loopback-ports');
  if (loopback === 'off' && ports !== undefined) throw new UsageError('--callback-loopback-ports needs --callback-loopback on');
  let callbackLoopbackPorts: PortRange[] | undefined;
  try {
    callbackLoopbackPorts = ports === undefined ? undefined : parsePortRanges(ports);
  } catch (error) {
    throw new UsageError(`--callback-loopback-ports: ${(error as Error).message}`);
  }
  const durability = get('durability') ?? 'normal';
  if (durability !== 'normal' && durability !== 'full') throw new UsageError('--durability must be normal or full');
  const logLevel = logLevelOf(get('log-level'));
  const token = get('token');
  const tokenFile = get('token-file');
  if (token === undefined && tokenFile === undefined) throw new UsageError('--token or --token-file is required');
  if (token !== undefined && token.length === 0) throw new UsageError('--token must not be empty');
  const keepalive = get('keepalive-ms');
  const maxReaders = get('max-readers');
  const maxStreams = get('max-streams');
  const optionalDuration = (flag: Flag, maxMs?: number) => {
    const text = get(flag);
    return text === undefined ? undefined : parseDuration(flag, text, maxMs);
  };
  const headersTimeoutMs = optionalDuration('headers-timeout', CONNECTION_LIMIT_MAX_MS);
  const requestTimeoutMs = optionalDuration('request-timeout', CONNECTION_LIMIT_MAX_MS);
  try {
    httpLimits({
      ...(headersTimeoutMs !== undefined ? { headersTimeoutMs } : {}),
      ...(requestTimeoutMs !== undefined ? { requestTimeoutMs } : {}),
    });
  } catch {
    // The one rule between the limits, checked here to say it in flags rather than fail at start.
    throw new UsageError('--headers-timeout must not be longer than --request-timeout');
  }
  return {
    host: get('host') ?? '127.0.0.1',
    port: integer('port', get('port') ?? '8787', 0, 65535),
    db: get('db') ?? 'data/assistant-relay.db',
    token,
    tokenFile,
    agent: agent as BuiltinAgentName,
    form,
    insights,
    callbackAllowlist,
    corsOrigins: parseOrigins('cors-origin', get('cors-origin')),
    callbackLoopback: loopback === 'on',
    callbackLoopbackPorts,
    keepaliveMs: keepalive === undefined ? undefined : integer('keepalive-ms', keepalive, 1, 3_600_000),
    maxReaders: maxReaders === undefined ? undefined : integer('max-readers', maxReaders, 1, 10_000),
    maxStreams: maxStreams === undefined ? undefined : integer('max-streams', maxStreams, 1, 1_000_000),
    headersTimeoutMs,
    requestTimeoutMs,
    connectionIdleTimeoutMs: optionalDuration('connection-idle-timeout', CONNECTION_LIMIT_MAX_MS),
    sessionIdleTtlMs: optionalDuration('session-idle-ttl'),
    retentionMs: retentionOf(get('retention')),
    synchronous: durability,
    logLevel,
  };
}
