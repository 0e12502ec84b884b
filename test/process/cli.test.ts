/**
 * `assistant-relay serve` as users run it: the built CLI in a child process, a real SQLite file, real
 * HTTP on 127.0.0.1.
 */
import Database from 'better-sqlite3';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { USAGE, parseServeArgs } from '../../adapters/cli/args.js';
import { BACKEND_USAGE } from '../../adapters/cli/backend.js';
import { UsageError } from '../../adapters/cli/flags.js';
import { INTEGRATIONS_USAGE } from '../../adapters/cli/integrations.js';
import { PAIR_USAGE } from '../../adapters/cli/pair.js';
import { CHAT_USAGE } from '../../adapters/cli/chat.js';
import { CALL_USAGE } from '../../adapters/cli/call.js';
import { DEMO_USAGE } from '../../adapters/cli/demo.js';
import { REKEY_USAGE } from '../../adapters/cli/rekey.js';
import { JOB_USAGE } from '../../adapters/cli/job.js';
import { PLUGIN_USAGE } from '../../adapters/cli/plugin.js';
import { REPLAY_USAGE } from '../../adapters/cli/replay.js';
import { INSPECT_USAGE } from '../../adapters/cli/inspect.js';
import { EventLog } from '../../storage/event-log.js';
import { heartbeatOf } from '../support/backend.js';
import { ServeChild, runCli, started, useChildFolder } from '../support/child.js';
import { post, request, script } from '../support/http.js';
import { RawSocket } from '../support/raw-socket.js';
import { SseConnection } from '../support/sse.js';
import { readBackendEvents, readEvents } from '../support/log.js';
import { POSTGRES_URL, testSchema } from '../support/postgres.js';
import { eventually } from '../support/wait.js';

const TOKEN = 'cli-test-token-7f3a9c';

const folder = useChildFolder();

function serve(args: readonly string[], env: Record<string, string> = {}): Promise<ServeChild> {
  return ServeChild.start(['--port', '0', ...args], { env });
}

/** The one JSON line a CLI that failed to start leaves on stderr. */
function startFailure(result: { stdout: string; stderr: string }): {
  level: number;
  msg: string;
  err: { type: string; code: string; message: string };
} {
  expect(result.stdout).toBe('');
  return JSON.parse(result.stderr.trim());
}

const modeOf = (file: string) => statSync(file).mode & 0o777;

describe('serve: stdout', () => {
  it('prints exactly one line, {"listening":"http://127.0.0.1:PORT"}, and nothing else for its whole life', async () => {
    const child = await serve(['--db', join(folder(), 'relay.db'), '--token', TOKEN, '--agent', 'script']);
    expect(child.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(Number(new URL(child.url).port)).toBeGreaterThan(0);
    const stream = await SseConnection.open(`${child.url}/v1/events?session_id=s`, { token: TOKEN });
    expect(
      (await post(child.url, TOKEN, { session_id: 's', task_id: 't1', text: script({ typing: 'x' }, { message: 'hi' }) })).status,
    ).toBe(202);
    await stream.untilReplies(1);
    expect(await child.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(child.stdout).toBe(`${JSON.stringify({ listening: child.url })}\n`);
  });

  it('answers GET /healthz with 200 without a token', async () => {
    const child = await serve(['--db', join(folder(), 'relay.db'), '--token', TOKEN]);
    const health = await request(`${child.url}/healthz`);
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ ok: true, epoch: expect.stringMatching(/^[0-9a-z]+$/) });
    // The token guards the protocol routes, not the health check.
    expect((await request(`${child.url}/v1/sessions/s`)).status).toBe(401);
  });
});

describe('serve: configuration', () => {
  it('reads every setting from ASSISTANT_RELAY_* when no flag is given', async () => {
    const db = join(folder(), 'from-env', 'relay.db');
    const child = await ServeChild.start([], {
      env: {
        ASSISTANT_RELAY_HOST: '127.0.0.1',
        ASSISTANT_RELAY_PORT: '0',
        ASSISTANT_RELAY_DB: db,
        ASSISTANT_RELAY_TOKEN: TOKEN,
        ASSISTANT_RELAY_AGENT: 'script',
        ASSISTANT_RELAY_KEEPALIVE_MS: '100',
        ASSISTANT_RELAY_MAX_READERS: '1',
        ASSISTANT_RELAY_MAX_STREAMS: '2',
        ASSISTANT_RELAY_HEADERS_TIMEOUT: '300ms',
        ASSISTANT_RELAY_REQUEST_TIMEOUT: '600ms',
        ASSISTANT_RELAY_SESSION_IDLE_TTL: '1500ms',
      },
    });
    expect(existsSync(db)).toBe(true);
    const stream = await SseConnection.open(`${child.url}/v1/events?session_id=s`, { token: TOKEN });
    expect(stream.status).toBe(200);
    // MAX_READERS=1: a second live reader is refused.
    const second = await SseConnection.open(`${child.url}/v1/events?session_id=s`, { token: TOKEN });
    expect(second.status).toBe(429);
    expect(second.headers['retry-after']).toBeDefined();
    // MAX_STREAMS=2: a third stream is refused whatever its session.
    await SseConnection.open(`${child.url}/v1/events?session_id=other`, { token: TOKEN });
    const third = await SseConnection.open(`${child.url}/v1/events?session_id=third`, { token: TOKEN });
    expect(third.status).toBe(503);
    // HEADERS_TIMEOUT=300ms: a connection that sends nothing is cut with a 408 long before the 10 s default.
    const idle = await RawSocket.connect(child.url);
    await idle.untilClosed(5_000);
    expect(idle.response().status).toBe(408);
    // AGENT=script: the text runs as a script instead of being echoed.
    await post(child.url, TOKEN, { session_id: 's', task_id: 't1', text: script({ message: 'scripted' }) });
    await stream.untilReplies(1);
    expect(stream.replies[0]!.json).toMatchObject({ status: 'message', reply_text: 'scripted' });
    // KEEPALIVE_MS=100: idle keep-alives arrive well before the 20 s default.
    await stream.until((c) => c.comments.filter((x) => x === 'keep-alive').length >= 2, 3_000, 'two keep-alives');
    // SESSION_IDLE_TTL=1500ms: the idle session ends and its stream closes.
    await stream.untilEnded(5_000);
    const view = await request(`${child.url}/v1/sessions/s`, { token: TOKEN });
    expect(view.body).toMatchObject({ state: 'ended', end_reason: 'idle' });
  });

  it('lets a flag win over its environment variable', async () => {
    const child = await serve(['--db', join(folder(), 'relay.db'), '--token', 'flag-token'], { ASSISTANT_RELAY_TOKEN: 'env-token' });
    expect((await request(`${child.url}/v1/sessions/s`, { token: 'flag-token' })).status).toBe(404);
    expect((await request(`${child.url}/v1/sessions/s`, { token: 'env-token' })).status).toBe(401);
  });

  it('maps each flag to ASSISTANT_RELAY_<FLAG> (argument parsing)', () => {
    const env = {
      ASSISTANT_RELAY_HOST: '127.0.0.1',
      ASSISTANT_RELAY_PORT: '9999',
      ASSISTANT_RELAY_DB: 'x.db',
      ASSISTANT_RELAY_TOKEN: 't',
      ASSISTANT_RELAY_TOKEN_FILE: 'tok',
      ASSISTANT_RELAY_AGENT: 'script',
      ASSISTANT_RELAY_INSIGHTS: 'builtin',
      ASSISTANT_RELAY_FORM: 'B',
      ASSISTANT_RELAY_CALLBACK_ALLOWLIST: 'https://Desktop.example.com:443,http://10.1.2.3:8080',
      ASSISTANT_RELAY_CALLBACK_LOOPBACK: 'on',
      ASSISTANT_RELAY_CALLBACK_LOOPBACK_PORTS: '8080, 9000-9100',
      ASSISTANT_RELAY_CORS_ORIGIN: 'http://localhost:5173',
      ASSISTANT_RELAY_KEEPALIVE_MS: '250',
      ASSISTANT_RELAY_MAX_READERS: '7',
      ASSISTANT_RELAY_MAX_STREAMS: '64',
      ASSISTANT_RELAY_HEADERS_TIMEOUT: '5s',
      ASSISTANT_RELAY_REQUEST_TIMEOUT: '1m',
      ASSISTANT_RELAY_CONNECTION_IDLE_TIMEOUT: '2s',
      ASSISTANT_RELAY_SESSION_IDLE_TTL: '30m',
      ASSISTANT_RELAY_RETENTION: '2d',
      ASSISTANT_RELAY_DURABILITY: 'full',
      ASSISTANT_RELAY_LOG_LEVEL: 'warn',
    };
    expect(parseServeArgs([], env)).toEqual({
      host: '127.0.0.1',
      port: 9999,
      db: 'x.db',
      token: 't',
      tokenFile: 'tok',
      agent: 'script',
      insights: 'builtin',
      form: 'B',
      callbackAllowlist: ['https://desktop.example.com', 'http://10.1.2.3:8080'],
      corsOrigins: ['http://localhost:5173'],
      callbackLoopback: true,
      callbackLoopbackPorts: [
        [8080, 8080],
        [9000, 9100],
      ],
      keepaliveMs: 250,
      maxReaders: 7,
      maxStreams: 64,
      headersTimeoutMs: 5_000,
      requestTimeoutMs: 60_000,
      connectionIdleTimeoutMs: 2_000,
      sessionIdleTtlMs: 30 * 60_000,
      retentionMs: 2 * 24 * 3_600_000,
      synchronous: 'full',
      logLevel: 'warn',
    });
    expect(parseServeArgs(['--retention', 'off', '--token', 't'], {}).retentionMs).toBe(Infinity);
  });

  it('rejects every bad flag or environment value with a UsageError naming it (argument parsing)', () => {
    const cases: Array<{ args: string[]; env?: Record<string, string>; says: RegExp }> = [
      { args: ['--token', 'x', '--bogus'], says: /bogus/ },
      { args: ['--token', 'x', '--port', 'http'], says: /--port/ },
      { args: ['--token', 'x', '--port', '70000'], says: /--port/ },
      { args: ['--token', 'x', '--agent', 'nope'], says: /--agent/ },
      { args: ['--token', 'x', '--retention', 'forever'], says: /--retention/ },
      { args: [], says: /--token/ },
      { args: ['--token', ''], says: /--token/ },
      { args: ['--token', 'x', '--max-readers', '0'], says: /--max-readers/ },
      { args: ['--token', 'x', '--keepalive-ms', '1.5'], says: /--keepalive-ms/ },
      { args: ['--token', 'x', '--max-streams', '0'], says: /--max-streams/ },
      { args: ['--token', 'x', '--headers-timeout', 'soon'], says: /--headers-timeout/ },
      { args: ['--token', 'x', '--request-timeout', '2h'], says: /--request-timeout/ },
      { args: ['--token', 'x', '--connection-idle-timeout', '0ms'], says: /--connection-idle-timeout/ },
      // Longer than the default 30 s request limit, and longer than a given one.
      { args: ['--token', 'x', '--headers-timeout', '40s'], says: /--headers-timeout must not be longer than --request-timeout/ },
      { args: ['--token', 'x', '--headers-timeout', '5s', '--request-timeout', '2s'], says: /--headers-timeout must not be longer/ },
      { args: ['--token', 'x', '--session-idle-ttl', 'soon'], says: /--session-idle-ttl/ },
      { args: ['--token', 'x', '--durability', 'eventually'], says: /--durability/ },
      { args: ['--token', 'x', '--form', 'C'], says: /--form/ },
      { args: ['--token', 'x', '--callback-allowlist', 'https://a.example.com/path'], says: /--callback-allowlist/ },
      { args: ['--token', 'x', '--callback-allowlist', 'ftp://a.example.com'], says: /--callback-allowlist/ },
      { args: ['--token', 'x', '--callback-loopback', 'maybe'], says: /--callback-loopback must be on or off/ },
      { args: ['--token', 'x', '--callback-loopback-ports', '9100-9000'], says: /--callback-loopback-ports: 9100-9000 runs backwards/ },
      { args: ['--token', 'x', '--callback-loopback-ports', ''], says: /--callback-loopback-ports/ },
      {
        args: ['--token', 'x', '--callback-loopback', 'off', '--callback-loopback-ports', '8080'],
        says: /--callback-loopback-ports needs --callback-loopback on/,
      },
      { args: ['--token', 'x'], env: { ASSISTANT_RELAY_CALLBACK_LOOPBACK: 'no' }, says: /--callback-loopback/ },
      { args: ['--token', 'x', 'extra'], says: /extra/ },
      { args: ['--token', 'x'], env: { ASSISTANT_RELAY_PORT: '-1' }, says: /--port/ },
      { args: ['--token', 'x'], env: { ASSISTANT_RELAY_KEEPALIVE_MS: '0' }, says: /--keepalive-ms/ },
      { args: ['--token', 'x'], env: { ASSISTANT_RELAY_SESSION_IDLE_TTL: '0s' }, says: /--session-idle-ttl/ },
      { args: ['--token', 'x'], env: { ASSISTANT_RELAY_DURABILITY: 'eventually' }, says: /--durability/ },
      { args: ['--token', 'x'], env: { ASSISTANT_RELAY_AGENT: 'nope' }, says: /--agent/ },
    ];
    for (const { args, env, says } of cases) {
      const label = JSON.stringify({ args, env });
      expect(() => parseServeArgs(args, env ?? {}), label).toThrow(UsageError);
      expect(() => parseServeArgs(args, env ?? {}), label).toThrow(says);
    }
  });

  it('exits 2 with the usage on stderr, and nothing on stdout, for bad flags and bad environment values', async () => {
    const db = join(folder(), 'never.db');
    const cases: Array<{ args: string[]; env?: Record<string, string>; says: RegExp }> = [
      { args: ['serve', '--token', 'x', '--bogus'], says: /bogus/ },
      { args: ['serve'], says: /--token/ },
      { args: ['serve', '--token', 'x'], env: { ASSISTANT_RELAY_MAX_READERS: 'lots' }, says: /--max-readers/ },
    ];
    const results = await Promise.all(cases.map((c) => runCli(c.args, { ASSISTANT_RELAY_DB: db, ...c.env })));
    results.forEach((result, i) => {
      const { args, env, says } = cases[i]!;
      const label = JSON.stringify({ args, env });
      expect(result.code, label).toBe(2);
      expect(result.stdout, label).toBe('');
      expect(result.stderr, label).toMatch(says);
      expect(result.stderr, label).toContain(USAGE);
    });
    // Refused before anything was opened.
    expect(existsSync(db)).toBe(false);
  });

  it("starts --help with the commands, one line each, and says where each one's options are", async () => {
    const all = await runCli(['--help']);
    expect(all).toMatchObject({ code: 0, stderr: '' });
    const lines = all.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('usage: assistant-relay <command> [options]');
    const listed = lines.filter((line) => /^ {2}[a-z]+ {2,}\S/.test(line)).map((line) => line.trim().split(/\s+/)[0]);
    const commands = [
      'demo',
      'serve',
      'chat',
      'call',
      'backend',
      'plugin',
      'pair',
      'rekey',
      'job',
      'integrations',
      'conformance',
      'replay',
      'inspect',
    ];
    expect(listed).toEqual(commands);
    expect(all.stdout).toContain('`assistant-relay <command> --help`');
    expect(lines.length).toBeLessThan(25);
    // With no command, and as `help`, the same list.
    expect(await runCli([])).toEqual(all);
    expect(await runCli(['help'])).toEqual(all);
  });

  it("prints a command's usage on stdout and exits 0 for <command> --help, -h and help <command>", async () => {
    const cases = [
      ...([
        ['serve', USAGE],
        ['backend', BACKEND_USAGE],
        ['plugin', PLUGIN_USAGE],
        ['pair', PAIR_USAGE],
        ['rekey', REKEY_USAGE],
        ['job', JOB_USAGE],
      ] as const),
      ...([
        ['integrations', INTEGRATIONS_USAGE],
        ['chat', CHAT_USAGE],
        ['call', CALL_USAGE],
        ['demo', DEMO_USAGE],
        ['replay', REPLAY_USAGE],
      ] as const),
      ...([['inspect', INSPECT_USAGE]] as const),
    ].map(([command, usage]) => ({ args: [command, '--help'], usage }));
    cases.push({ args: ['replay', '-h'], usage: REPLAY_USAGE }, { args: ['help', 'job'], usage: JOB_USAGE });
    const results = await Promise.all(cases.map(({ args }) => runCli(args)));
    results.forEach((result, i) =>
      expect(result, cases[i]!.args.join(' ')).toMatchObject({ code: 0, stderr: '', stdout: `${cases[i]!.usage}\n` }),
    );
  });

  it('refuses an unknown command with exit 2 and the list of commands on stderr', async () => {
    const list = (await runCli(['--help'])).stdout;
    for (const args of [['frobnicate'], ['help', 'frobnicate']]) {
      const result = await runCli(args);
      expect(result).toMatchObject({ code: 2, stdout: '' });
      expect(result.stderr).toBe(`assistant-relay: unknown command "frobnicate"\n${list}`);
    }
  });

  it("prints the package's version for --version and -v", async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(await runCli(['--version'])).toEqual({ code: 0, signal: null, stdout: `${version}\n`, stderr: '' });
    expect(await runCli(['-v'])).toEqual({ code: 0, signal: null, stdout: `${version}\n`, stderr: '' });
  });

  it('refuses a --db file that is not an assistant-relay event log, and leaves it untouched', async () => {
    const db = join(folder(), 'notes.db');
    const other = new Database(db);
    other.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')");
    other.close();
    const result = await runCli(['serve', '--port', '0', '--db', db, '--token', TOKEN]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/not an assistant-relay event log/);
    // Still a JSON log line, like everything else on stderr.
    expect(JSON.parse(result.stderr.trim())).toMatchObject({ level: 60, msg: 'failed to start', err: { type: 'SchemaMismatchError' } });
    const check = new Database(db, { readonly: true });
    expect(check.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all()).toEqual([{ name: 'notes' }]);
    check.close();
  });
});

describe('serve: --token-file', () => {
  it('creates a 0600 file with a random token when absent, and reuses it afterwards', async () => {
    const file = join(folder(), 'secrets', 'token');
    const db = join(folder(), 'relay.db');
    const first = await serve(['--db', db, '--token-file', file]);
    const token = readFileSync(file, 'utf8').trim();
    expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await request(`${first.url}/v1/sessions/s`, { token })).status).toBe(404);
    expect(await first.stop('SIGTERM')).toEqual({ code: 0, signal: null });

    // The same file through its environment variable: read, not replaced.
    const second = await serve(['--db', db], { ASSISTANT_RELAY_TOKEN_FILE: file });
    expect(readFileSync(file, 'utf8').trim()).toBe(token);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await request(`${second.url}/v1/sessions/s`, { token })).status).toBe(404);
    expect((await request(`${second.url}/v1/sessions/s`, { token: 'guess' })).status).toBe(401);
    await second.stop('SIGTERM');

    // Another fresh file gets another token.
    const otherFile = join(folder(), 'other-token');
    const third = await serve(['--db', db, '--token-file', otherFile]);
    expect(readFileSync(otherFile, 'utf8').trim()).not.toBe(token);
    await third.stop('SIGTERM');
  });

  it('refuses an empty token file with exit 2', async () => {
    const file = join(folder(), 'empty-token');
    writeFileSync(file, '\n');
    const result = await runCli(['serve', '--port', '0', '--db', join(folder(), 'relay.db'), '--token-file', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/empty/);
  });
});

describe('serve: the event log and its files', () => {
  it("refuses a second serve on the same --db, naming the first one's pid, and starts once the first is killed", async () => {
    const db = join(folder(), 'relay.db');
    const first = await serve(['--db', db, '--token', TOKEN]);
    const second = await runCli(['serve', '--port', '0', '--db', db, '--token', TOKEN]);
    expect(second.code).toBe(1);
    expect(startFailure(second)).toMatchObject({
      level: 60,
      msg: 'failed to start',
      err: { type: 'EventLogLockedError', code: 'event_log_locked', message: expect.stringContaining(`pid ${first.pid}`) },
    });
    // The first one serves on, and still writes its log.
    expect((await post(first.url, TOKEN, { session_id: 's', task_id: 't1', text: 'still here' })).status).toBe(202);

    expect(await first.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    const third = await serve(['--db', db, '--token', TOKEN]);
    expect((await request(`${third.url}/v1/sessions/s`, { token: TOKEN })).body).toMatchObject({ state: 'open' });
  });

  it('creates its folders 0700, and the token file, the log, its -wal and -shm 0600, whatever the umask', async () => {
    const data = join(folder(), 'data');
    const umask = process.umask(0);
    // The child takes the umask when it is spawned, before the first await.
    const starting = serve(['--db', join(data, 'log', 'relay.db'), '--token-file', join(data, 'token')]);
    process.umask(umask);
    await starting;
    expect([data, join(data, 'log')].map(modeOf)).toEqual([0o700, 0o700]);
    for (const file of ['token', 'log/relay.db', 'log/relay.db-wal', 'log/relay.db-shm'])
      expect(modeOf(join(data, file)), file).toBe(0o600);
  });

  it('refuses a log or a token file that other users can access, saying what to run', async () => {
    const db = join(folder(), 'relay.db');
    await (await serve(['--db', db, '--token', TOKEN])).stop('SIGTERM');
    chmodSync(db, 0o640);
    const exposedLog = await runCli(['serve', '--port', '0', '--db', db, '--token', TOKEN]);
    expect(exposedLog.code).toBe(1);
    expect(startFailure(exposedLog)).toMatchObject({
      msg: 'failed to start',
      err: { type: 'EventLogPermissionsError', code: 'event_log_permissions', message: expect.stringContaining(`chmod 600 ${db}`) },
    });

    const file = join(folder(), 'token');
    writeFileSync(file, `${TOKEN}\n`);
    chmodSync(file, 0o644);
    const other = join(folder(), 'other.db');
    const exposedToken = await runCli(['serve', '--port', '0', '--db', other, '--token-file', file]);
    expect(exposedToken.code).toBe(2);
    expect(exposedToken.stderr).toContain(`chmod 600 ${file}`);
    // Refused before the log was opened.
    expect(existsSync(other)).toBe(false);
  });
});

describe('serve: logs', () => {
  it('writes JSON lines to stderr that never contain the token, right or wrong', async () => {
    const wrong = 'wrong-token-5d1e88';
    // debug: one line per request, so that the requests below reach the log with their headers' context.
    const child = await serve(['--db', join(folder(), 'relay.db'), '--token', TOKEN, '--agent', 'script', '--log-level', 'debug']);
    await request(`${child.url}/healthz`, { token: TOKEN });
    expect((await post(child.url, TOKEN, { session_id: 's', task_id: 't1', text: 'hello' })).status).toBe(202);
    expect((await post(child.url, wrong, { session_id: 's', task_id: 't2', text: 'hello' })).status).toBe(401);
    expect((await request(`${child.url}/v1/events?session_id=s`, { token: wrong })).status).toBe(401);
    expect((await request(`${child.url}/v1/events?session_id=s`, { headers: { authorization: TOKEN } })).status).toBe(401);
    expect((await request(`${child.url}/v1/nowhere`, { token: TOKEN })).status).toBe(404);
    // A callback token is a secret too: request bodies must not reach the log.
    await post(child.url, TOKEN, { session_id: 's', task_id: 't3', text: 'x', callback: { url: 'http://127.0.0.1:1/cb', token: wrong } });
    const stream = await SseConnection.open(`${child.url}/v1/events?session_id=s`, { token: TOKEN });
    expect(stream.status).toBe(200);
    expect(await child.stop('SIGTERM')).toEqual({ code: 0, signal: null });

    const lines = child.stderr.split('\n').filter((line) => line.length > 0);
    const entries = lines.map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`stderr line is not JSON: ${line}`);
      }
    });
    for (const entry of entries) expect(entry).toMatchObject({ level: expect.any(Number), msg: expect.any(String) });
    // The requests above were logged (so the absence of the token below means something).
    expect(entries.some((e) => (e.res as { statusCode?: number } | undefined)?.statusCode === 401)).toBe(true);
    expect(entries.some((e) => e.msg === 'closed')).toBe(true);
    expect(child.stderr).not.toContain(TOKEN);
    expect(child.stderr).not.toContain(wrong);
  });
});

describe('serve: SIGTERM', () => {
  it('ends open streams, exits 0, and leaves a consistent database', async () => {
    const db = join(folder(), 'relay.db');
    const child = await serve(['--db', db, '--token', TOKEN, '--agent', 'script']);
    const stream = await SseConnection.open(`${child.url}/v1/events?session_id=s`, { token: TOKEN });
    await post(child.url, TOKEN, { session_id: 's', task_id: 't1', text: 'first' });
    await stream.untilReplies(1);
    // A task still running at SIGTERM: shutdown must not wait for it, nor corrupt anything.
    await post(child.url, TOKEN, {
      session_id: 's',
      task_id: 't2',
      text: script({ typing: 'long' }, { sleep: 60_000 }, { message: 'late' }),
    });
    await stream.until((c) => c.frames.length >= 2, 5_000, 'progress of t2');

    expect(await child.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    await stream.untilEnded(1_000);

    // A clean close checkpoints the WAL into the file; reopening it finds every event intact.
    expect(existsSync(`${db}-wal`) ? statSync(`${db}-wal`).size : 0).toBe(0);
    const check = new Database(db, { readonly: true });
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    check.close();
    const log = EventLog.open<{ type: string; at: number; stream: string; task_id?: string; data?: string }>({
      path: db,
      streamOf: (e) => e.stream,
    });
    const events = [...log.read()].map((e) => e.event);
    await log.close();
    expect(events.filter((e) => e.type === 'task.started').map((e) => e.task_id)).toEqual(['t1', 't2']);
    expect(events.filter((e) => e.type === 'task.settled').map((e) => e.data)).toEqual([stream.replies[0]!.data]);
  });

  it('also closes cleanly on SIGINT', async () => {
    const child = await serve(['--db', join(folder(), 'relay.db'), '--token', TOKEN]);
    // Sent the moment the listening line is read: the handlers must already be in place.
    expect(await child.stop('SIGINT')).toEqual({ code: 0, signal: null });
  });
});

describe('backend: the store and the broker', () => {
  it.each([
    [['--pubsub', 'nats://127.0.0.1:4222'], /--pubsub goes with --store/],
    [['--schema', 'relay'], /--schema goes with --store/],
    [['--store', 'postgres://127.0.0.1/test', '--db', 'x.db'], /--db and --store name two logs/],
    [['--store', 'mysql://127.0.0.1/test'], /--store must start postgres:\/\/ or postgresql:\/\//],
    [['--store', 'not a url'], /--store must be a URL/],
    [['--store', 'postgres://127.0.0.1/test', '--schema', 'Relay-1'], /--schema must be lowercase letters/],
    [['--store', 'postgres://127.0.0.1/test', '--pubsub', 'amqp://127.0.0.1'], /--pubsub must start nats:\/\/ or redis:\/\//],
    [['--store', 'postgres://127.0.0.1/test', '--namespace', 'a b'], /--namespace must be letters/],
    [['--store', 'postgres://127.0.0.1/test', '--store-queue', '0'], /--store-queue/],
    [['--pairing', 'closed'], /--pairing must be open or ticket/],
    [['--trust-proxy', 'proxy.example'], /--trust-proxy: "proxy.example" is not an address/],
    [['--result-check-timeout', '2m'], /--result-check-timeout must be at most 60000ms/],
  ])('refuses %j with the usage, before connecting to anything', async (args, says) => {
    const result = await runCli(['backend', '--port', '0', ...args]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(says);
    expect(result.stderr).toContain(BACKEND_USAGE);
  });
});

describe('backend: the heartbeat interval, the missed heartbeats and the delivery lease (PROTOCOL.md 6e.25)', () => {
  it.each([
    [['--heartbeat-interval', '500ms'], {}, /--heartbeat-interval\) must be whole seconds/],
    [['--delivery-lease', '30s'], {}, /--delivery-lease\) must be from two heartbeat intervals/],
    [[], { ASSISTANT_RELAY_MISSED_HEARTBEATS: '0' }, /--missed-heartbeats must be between 1 and 100/],
  ])('refuses %j %j with the usage', async (args, env, says) => {
    const result = await runCli(['backend', '--port', '0', ...args], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(says);
    expect(result.stderr).toContain(BACKEND_USAGE);
  });

  it('tells plugins its interval, and shows an integration offline once that many intervals pass without a heartbeat', async () => {
    const db = join(folder(), 'backend.db');
    const created = await runCli(['backend', 'integration', 'create', '--db', db]);
    const { integration_id, relay_token, client_token } = JSON.parse(created.stdout) as {
      [K in 'integration_id' | 'relay_token' | 'client_token']: string;
    };
    const backend = await started(['backend', '--port', '0', '--db', db, '--missed-heartbeats', '2', '--log-level', 'silent'], {
      ASSISTANT_RELAY_HEARTBEAT_INTERVAL: '1s',
      ASSISTANT_RELAY_DELIVERY_LEASE: '2s',
    });
    try {
      const base = `${String(backend.line.listening)}/api/v1/assistant/integrations/${integration_id}`;
      const answer = await request(`${base}/heartbeat`, { token: relay_token, body: heartbeatOf() });
      expect(answer).toMatchObject({ status: 200, body: { interval_s: 1 } });
      const state = async () => ((await request(base, { token: client_token })).body as { state: string }).state;
      expect(await state()).toBe('online');
      await eventually('the integration offline', state, (now) => now === 'offline', { timeoutMs: 15_000 });
    } finally {
      backend.child.kill('SIGTERM');
      await backend.exited;
    }
    // Two missed intervals of a second after the heartbeat, not three of 30 s.
    const [seen, offline] = readEvents(db).filter((e) => e.type === 'integration.seen' || e.type === 'integration.offline');
    expect([seen?.type, offline?.type]).toEqual(['integration.seen', 'integration.offline']);
    expect(Number(offline!.at) - Number(seen!.at)).toBeGreaterThanOrEqual(2_000);
  });
});

describe('backend integration create --store', () => {
  it('creates the integration in the shared store, which nodes running on it fold', async () => {
    const schema = testSchema();
    const result = await runCli(['backend', 'integration', 'create', '--store', POSTGRES_URL, '--schema', schema]);
    expect(result.code, result.stderr).toBe(0);
    const created = JSON.parse(result.stdout) as { integration_id: string; client_token: string };
    expect(created).toMatchObject({
      integration_id: expect.any(String),
      provider_kind: 'assistant-relay',
      relay_token: expect.any(String),
    });
    const events = await readBackendEvents(`${POSTGRES_URL}#${schema}`);
    expect(events.filter((event) => event.type === 'integration.created').map((event) => event.integration_id)).toEqual([
      created.integration_id,
    ]);
  });
});
