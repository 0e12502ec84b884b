/**
 * What every command's flags have in common: parsed by `node:util` parseArgs, each one also readable from
 * `ASSISTANT_RELAY_<FLAG>` (dashes as underscores, upper case; the command line wins), refused with a
 * `UsageError` (exit 2, with the usage) when it is wrong.
 */
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { UsageError } from '../usage-error.js';

// Every command imports it with the flags it checks.
export { UsageError };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type FlagSpec = Record<string, { readonly type: 'string' | 'boolean' }>;

type FlagValue<T> = T extends { readonly type: 'boolean' } ? boolean : string;

/**
 * The flags of `argv` (no positionals), each falling back to its environment variable; a boolean flag is set
 * from the environment by `1` or `true`.
 */
export function readFlags<S extends FlagSpec>(
  argv: readonly string[],
  spec: S,
  env: NodeJS.ProcessEnv,
): <F extends keyof S & string>(flag: F) => FlagValue<S[F]> | undefined {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: [...argv], options: spec, strict: true, allowPositionals: false }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  return <F extends keyof S & string>(flag: F) => {
    const fromEnv = env[`ASSISTANT_RELAY_${flag.toUpperCase().replaceAll('-', '_')}`];
    if (spec[flag]!.type === 'boolean')
      return (values[flag] ?? (fromEnv === undefined ? undefined : fromEnv === '1' || fromEnv === 'true')) as FlagValue<S[F]> | undefined;
    return (values[flag] ?? fromEnv) as FlagValue<S[F]> | undefined;
  };
}

/** A flag's value, refused as a usage error when it is missing or empty. */
export function requiredFlag<F extends string>(read: (flag: F) => string | undefined, flag: F): string {
  const value = read(flag);
  if (value === undefined || value === '') throw new UsageError(`--${flag} is required`);
  return value;
}

export function integer(flag: string, text: string, min: number, max: number): number {
  if (!/^\d+$/.test(text)) throw new UsageError(`--${flag} must be a whole number, not ${JSON.stringify(text)}`);
  const n = Number(text);
  if (n < min || n > max) throw new UsageError(`--${flag} must be between ${min} and ${max}`);
  return n;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `500ms`, `90s`, `30m`, `24h`, `7d`, or bare milliseconds. */
export function parseDuration(flag: string, text: string, maxMs = Number.MAX_SAFE_INTEGER): number {
  const match = /^(\d+)(ms|s|m|h|d)?$/.exec(text);
  if (match === null) throw new UsageError(`--${flag} must be a duration such as 500ms, 90s, 30m or 24h`);
  const ms = Number(match[1]) * UNITS[match[2] ?? 'ms']!;
  if (ms < 1 || !Number.isSafeInteger(ms)) throw new UsageError(`--${flag} must be at least 1ms`);
  if (ms > maxMs) throw new UsageError(`--${flag} must be at most ${maxMs}ms`);
  return ms;
}

/** `--retention D|off`: how long what ended is kept (`Infinity` for off), or undefined for the default. */
export function retentionOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  return text === 'off' ? Infinity : parseDuration('retention', text);
}

export function logLevelOf(text: string | undefined): LogLevel {
  const level = text ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  return level as LogLevel;
}

/** A comma-separated list of browser origins (`--cors-origin`), each as a browser writes it in `Origin`. */
export function parseOrigins(flag: string, text: string | undefined): string[] {
  if (text === undefined || text.trim() === '') return [];
  return text.split(',').map((entry) => {
    const value = entry.trim();
    const url = URL.canParse(value) ? new URL(value) : undefined;
    if (
      url === undefined ||
      !/^https?:$/.test(url.protocol) ||
      url.origin === 'null' ||
      value.replace(/\/$/, '').toLowerCase() !== url.origin.toLowerCase()
    ) {
      throw new UsageError(`--${flag}: ${JSON.stringify(value)} is not an origin such as https://app.example or http://localhost:5173`);
    }
    return url.origin;
  });
}

/** Reverse proxies (`--trust-proxy`): addresses, CIDR ranges, or the names of ranges fastify knows (loopback, linklocal, uniquelocal). */
export function parseProxies(flag: string, text: string | undefined): string[] {
  if (text === undefined || text.trim() === '') return [];
  return text.split(',').map((entry) => {
    const value = entry.trim();
    const [address = '', bits, ...rest] = value.split('/');
    const family = isIP(address);
    const range = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
    if (!['loopback', 'linklocal', 'uniquelocal'].includes(value) && (family === 0 || !range || rest.length > 0)) {
      throw new UsageError(`--${flag}: ${JSON.stringify(value)} is not an address, a CIDR range, loopback, linklocal or uniquelocal`);
    }
    return value;
  });
}

/** A base URL flag (`--backend`, `--url`), without its trailing slashes; only http and https. */
export function baseUrlFlag(flag: string, value: string): string {
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol))
    throw new UsageError(`--${flag} must be an http or https URL, not ${JSON.stringify(value)}`);
  return value.replace(/\/+$/, '');
}
