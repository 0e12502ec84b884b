/**
 * `assistant-relay conformance ROLE`: runs the conformance kit (adapters/conformance/) against another
 * implementation of a role of the protocol, at the URL it is given and nowhere else, and reports each
 * check with the rule it tests (docs/conformance.md). Exit 0 when no check failed, 1 when one did.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Need } from '../conformance/check.js';
import { pause } from '../conformance/arrivals.js';
import { CHECKS_OF, ROLES, runRole, type PluginBackend, type Role } from '../conformance/kit.js';
import { names } from '../conformance/runner.js';
import { REPORT_FORMATS, counts, report, type ReportFormat } from '../conformance/reports.js';
import { isIP } from 'node:net';
import { baseUrlFlag, integer, parseDuration, readFlags, requiredFlag, UsageError } from './flags.js';
import { readTokenFile } from './service.js';

export const CONFORMANCE_USAGE = `usage: assistant-relay conformance ROLE --url URL [credentials] [options]
roles:
  form-a-host              a Form A host: POST /v1/incoming, GET /v1/events (spec 4.2)
  form-b-host              a Form B host: its callbacks to the client's listener, which the kit plays (spec 4.3)
  backend                  a backend relay: the kit is one integration's plugin and client (spec 4.1)
  plugin                   an assistant plugin: the kit is its backend, listening at --listen (spec 4.1)
credentials (private files):
  --token-file FILE        a host's Bearer token
  --integration ID         backend: an integration with no plugin connected while the kit runs
  --relay-token-file FILE  backend: its RELAY_TOKEN
  --client-token-file FILE backend: its client token
  --plugin-command CMD     plugin: the command that starts it, run by the shell with {backend}, {integration},
                           {relay_token_file} and (--byo) {pairing_code} replaced; without it, the kit prints
                           them and waits for it
  --byo                    plugin: it pairs with the kit by a pairing code, and every job is sealed
  --provider-kind KIND     plugin: the provider it serves (default assistant-relay)
options:
  --url URL                the implementation's base URL (not for plugin); the kit sends traffic nowhere else
  --script-agent           the host runs an agent that follows the script steps (docs/conformance.md):
                           without it, the checks that need one are skipped
  --keepalive-ms N         the keep-alive interval the host is configured with (default 20000)
  --max-readers N          readers of one session to open before the reader cap counts as missing (default 32, at most 64)
  --listen HOST:PORT       form-b-host, plugin: where the kit listens, for the host's callbacks or as the
                           plugin's backend (default 127.0.0.1:0)
  --reply-timeout D        how long a reply may take (default 10s)
  --check-timeout D        how long one check may take (default 60s)
  --only LIST              only the checks named: ids or sections, comma-separated (form-a.open,4.2,2.7)
  --skip LIST              not these
  --format F               human (default), tap or junit
  --out FILE               the report there instead of stdout (a summary still goes to stderr)
Each flag may also be set as ASSISTANT_RELAY_<FLAG>.`;

const FLAGS = {
  url: { type: 'string' },
  'token-file': { type: 'string' },
  integration: { type: 'string' },
  'relay-token-file': { type: 'string' },
  'client-token-file': { type: 'string' },
  'plugin-command': { type: 'string' },
  'provider-kind': { type: 'string' },
  byo: { type: 'boolean' },
  'script-agent': { type: 'boolean' },
  'keepalive-ms': { type: 'string' },
  'max-readers': { type: 'string' },
  listen: { type: 'string' },
  'reply-timeout': { type: 'string' },
  'check-timeout': { type: 'string' },
  only: { type: 'string' },
  skip: { type: 'string' },
  format: { type: 'string' },
  out: { type: 'string' },
} as const;

const list = (text: string | undefined) =>
  text
    ?.split(',')
    .map((each) => each.trim())
    .filter((each) => each !== '');

/** `HOST:PORT` (`[::1]:0` for IPv6): an IP address and a port, 0 for any free one. */
function listenAt(text: string): { host: string; port: number } {
  const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(text);
  if (match === null || isIP(match[1]!) === 0)
    throw new UsageError(`--listen must be an IP address and a port, e.g. 127.0.0.1:0, not ${JSON.stringify(text)}`);
  // The address is advertised (a callback URL, the plugin's backend): "any address" names no one place.
  if (match[1] === '0.0.0.0' || match[1] === '::')
    throw new UsageError('--listen must name one address the implementation can reach, not 0.0.0.0 or ::');
  return { host: match[1]!, port: integer('listen', match[2]!, 0, 65_535) };
}

/** How long the plugin under test has to stop after SIGTERM before the kit sends SIGKILL. */
const STOP_GRACE_MS = 15_000;

/** A value as one word of a POSIX shell command line. */
const shellQuoted = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

/**
 * How the plugin under test is started against the kit's backend: by `command` (a shell command line with
 * {backend}, {integration}, {relay_token_file} and {pairing_code} replaced), or, without one, by whoever reads the line
 * the kit prints on stderr. The RELAY_TOKEN goes in a private file, never on a command line.
 */
function pluginStarter(command: string | undefined): (backend: PluginBackend) => Promise<() => Promise<void>> {
  return async (backend) => {
    const dir = mkdtempSync(join(tmpdir(), 'assistant-relay-conformance-'));
    const relay_token_file = join(dir, 'relay-token');
    writeFileSync(relay_token_file, `${backend.relayToken}\n`, { mode: 0o600 });
    const removeDir = async () => rmSync(dir, { recursive: true, force: true });
    const named = { backend: backend.url, integration: backend.integrationId, relay_token_file, pairing_code: backend.pairingCode ?? '' };
    if (command === undefined) {
      process.stderr.write(`${JSON.stringify({ start_plugin: named })}\n`);
      return removeDir;
    }
    // A group of its own: the shell and what it starts are stopped together.
    const child = spawn(
      command.replace(/\{(backend|integration|relay_token_file|pairing_code)\}/g, (_, name: keyof typeof named) =>
        shellQuoted(named[name]),
      ),
      { shell: true, detached: true, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const exited = new Promise((resolve) => {
      child.once('exit', resolve);
      child.once('error', (error) => {
        process.stderr.write(`assistant-relay conformance: the plugin command did not start: ${error.message}\n`);
        resolve(undefined);
      });
    });
    const signal = (name: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, name);
      } catch {
        // Gone already.
      }
    };
    /** Whether any process of the group is left. */
    const alive = () => {
      try {
        process.kill(-child.pid!, 0);
        return true;
      } catch {
        return false;
      }
    };
    return async () => {
      signal('SIGTERM');
      await exited;
      // The shell may be gone before what it started: wait for the whole group, then stop what is left,
      // after the grace a supervisor gives.
      for (const end = Date.now() + STOP_GRACE_MS; alive() && Date.now() < end;) await pause(100);
      signal('SIGKILL');
      await removeDir();
    };
  };
}

export async function conformanceCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [role, ...rest] = argv;
  if (!ROLES.includes(role as Role)) throw new UsageError(`the role must be one of ${ROLES.join(', ')}, not ${JSON.stringify(role)}`);
  const flags = readFlags(rest, FLAGS, env);
  const format = (flags('format') ?? 'human') as ReportFormat;
  if (!REPORT_FORMATS.includes(format)) throw new UsageError(`--format must be one of ${REPORT_FORMATS.join(', ')}`);
  const only = list(flags('only'));
  const skip = list(flags('skip'));
  // A mistyped name selects nothing: refused, rather than a run of no checks that passes.
  for (const pattern of [...(only ?? []), ...(skip ?? [])])
    if (!CHECKS_OF[role as Role].some((check) => names(pattern, check)))
      throw new UsageError(
        `--only or --skip: ${JSON.stringify(pattern)} names no check of ${role} (ids and sections: docs/conformance.md)`,
      );
  const listen = flags('listen');
  const results = await runRole(role as Role, {
    ...(role === 'plugin' ? {} : { url: new URL(baseUrlFlag('url', requiredFlag(flags, 'url'))) }),
    ...(role === 'plugin'
      ? { plugin: { providerKind: flags('provider-kind') ?? 'assistant-relay', start: pluginStarter(flags('plugin-command')) } }
      : role === 'backend'
        ? {
            integration: {
              id: requiredFlag(flags, 'integration'),
              relayToken: readTokenFile(requiredFlag(flags, 'relay-token-file'), { create: false }),
              clientToken: readTokenFile(requiredFlag(flags, 'client-token-file'), { create: false }),
            },
          }
        : { token: readTokenFile(requiredFlag(flags, 'token-file'), { create: false }) }),
    has: new Set<Need>([
      ...(flags('script-agent') === true ? ['script-agent' as const] : []),
      ...(flags('byo') === true ? ['byo' as const] : []),
    ]),
    ...(only === undefined ? {} : { only }),
    ...(skip === undefined ? {} : { skip }),
    checkTimeoutMs: parseDuration('check-timeout', flags('check-timeout') ?? '60s'),
    replyMs: parseDuration('reply-timeout', flags('reply-timeout') ?? '10s'),
    keepaliveMs: integer('keepalive-ms', flags('keepalive-ms') ?? '20000', 1, 3_600_000),
    maxReaders: integer('max-readers', flags('max-readers') ?? '32', 1, 64),
    ...(listen === undefined ? {} : { listen: listenAt(listen) }),
  });
  const text = report(format, role!, results);
  const out = flags('out');
  if (out === undefined) process.stdout.write(text);
  else writeFileSync(out, text);
  const { passed, failed, skipped } = counts(results);
  if (out !== undefined || format !== 'human') process.stderr.write(`${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  if (failed > 0) process.exitCode = 1;
}
