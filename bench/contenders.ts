/**
 * The contenders: each a server of its own process, and the clients that drive it. Every one does the
 * same echo turn over loopback HTTP: one progress event, then one final reply carrying the user's text.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { TOKEN } from './clients/form-a.js';
import { startServer, stopServer, type ServerChild } from './lib.js';
import type { ClientRef } from './clients/ref.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CLI = join(ROOT, 'dist/adapters/cli/main.js');
/** tsx for a TypeScript server, named by path: a server's cwd is its scratch folder, where no `tsx` resolves. */
export const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

export interface Server {
  /** `relay`, `relay-memory`, `mcp`, `a2a`, `durable`, `floor`. */
  readonly name: string;
  /** What the table calls it. */
  readonly title: string;
  /** The package it is, and its version, for the report. */
  readonly version: string;
  /** Node arguments that start it; it prints {"listening": url} when ready. */
  args(scratch: string): string[];
  /** Its idle stream, when it has one: a `(base, index) => Promise<close>` export. */
  readonly idle?: ClientRef;
  /** How a client that was away gets what it missed (the resume scenario), or why it cannot. */
  readonly resume:
    { readonly kind: 'client'; readonly client: ClientRef; readonly note?: string } | { readonly kind: 'cannot'; readonly why: string };
}

export interface Contender {
  readonly server: Server;
  /** `minimal`: the wire spoken by hand (light, so the server is the bound); `sdk`: the protocol's own client. */
  readonly client: 'minimal' | 'sdk';
  readonly ref: ClientRef;
  /** Row label: server and client. */
  readonly label: string;
}

const versionOf = (pkg: string) =>
  (JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
const ownVersion = () => (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** Extra node flags for our servers, e.g. BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (a profile is written at their SIGTERM). */
export const NODE_ARGS = process.env.BENCH_NODE_ARGS?.split(' ').filter((arg) => arg !== '') ?? [];

const relay = (name: string, title: string, db: (scratch: string) => string, cli = CLI): Server => ({
  name,
  title,
  version: `assistant-relay ${ownVersion()}`,
  args: (scratch) => [
    ...NODE_ARGS,
    cli,
    'serve',
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--db',
    db(scratch),
    '--token',
    TOKEN,
    '--agent',
    'echo',
    '--log-level',
    'silent',
    '--max-streams',
    '25000',
    '--connection-idle-timeout',
    '60s',
  ],
  idle: { module: 'clients/form-a.js', name: 'openIdleStream' },
  resume: {
    kind: 'client',
    client: { module: 'clients/form-a.js', name: 'awayAndBack' },
    note: 'the backlog keeps the newest 64 replies (1 MiB); older ones are named in the resync frame',
  },
});

export const SERVERS = {
  relay: relay('relay', 'assistant-relay (durable log)', (scratch) => join(scratch, 'relay.db')),
  relayMemory: relay('relay-memory', 'assistant-relay (log in :memory:)', () => ':memory:'),
  mcp: {
    name: 'mcp',
    title: 'MCP Streamable HTTP',
    version: `@modelcontextprotocol/sdk ${versionOf('@modelcontextprotocol/sdk')}`,
    args: () => ['--import', TSX, join(ROOT, 'bench/peers/mcp-server.ts'), '--port', '0'],
    idle: { module: 'peers/mcp-client.js', name: 'openIdleStream' },
    resume: {
      kind: 'client',
      client: { module: 'peers/mcp-client.js', name: 'awayAndBack' },
      note: "per request: one GET with Last-Event-ID for each turn's stream. Lost: the SDK's example event store orders ids as strings, so an event stored in the cursor's millisecond may sort before it (never replayed), or a result before its progress",
    },
  },
  a2a: {
    name: 'a2a',
    title: 'A2A streaming',
    version: `@a2a-js/sdk ${versionOf('@a2a-js/sdk')}`,
    args: () => ['--import', TSX, join(ROOT, 'bench/peers/a2a-server.ts'), '--port', '0'],
    idle: { module: 'peers/a2a-client.js', name: 'openIdleStream' },
    resume: {
      kind: 'cannot',
      why: 'no replay: resubscribing gives the task as it is now, then live events (a finished task is refused); what was sent while away is gone, and only finished tasks can be fetched (their final state and artifacts, not the updates)',
    },
  },
  durable: {
    name: 'durable',
    title: 'durable baseline (fastify + SQLite)',
    version: `fastify ${versionOf('fastify')}, better-sqlite3 ${versionOf('better-sqlite3')}`,
    args: (scratch) => [
      '--import',
      TSX,
      join(ROOT, 'bench/baselines/durable-turns.ts'),
      '--port',
      '0',
      '--token',
      TOKEN,
      '--db',
      join(scratch, 'durable-turns.db'),
    ],
    idle: { module: 'clients/form-a.js', name: 'openIdleStream' },
    resume: { kind: 'cannot', why: 'logs every message and reply but replays none: the durable cost of a turn alone' },
  },
  floor: {
    name: 'floor',
    title: 'floor (bare node:http)',
    version: `node ${process.versions.node}`,
    args: () => ['--import', TSX, join(ROOT, 'bench/floor.ts'), '--port', '0', '--token', TOKEN],
    idle: { module: 'clients/form-a.js', name: 'openIdleStream' },
    resume: { kind: 'cannot', why: 'keeps nothing: the floor is the live path alone' },
  },
} satisfies Record<string, Server>;

const contender = (server: Server, client: 'minimal' | 'sdk', module: string): Contender => ({
  server,
  client,
  ref: { module, name: client === 'minimal' ? 'minimalClient' : 'sdkClient' },
  label: client === 'minimal' ? server.title : `${server.title}, its SDK's client`,
});

/** Every contender, ours first, then the peers, the durable baseline and the floor. */
export const CONTENDERS: readonly Contender[] = [
  contender(SERVERS.relay, 'minimal', 'clients/form-a.js'),
  contender(SERVERS.relayMemory, 'minimal', 'clients/form-a.js'),
  contender(SERVERS.mcp, 'minimal', 'peers/mcp-client.js'),
  contender(SERVERS.mcp, 'sdk', 'peers/mcp-client.js'),
  contender(SERVERS.a2a, 'minimal', 'peers/a2a-client.js'),
  contender(SERVERS.a2a, 'sdk', 'peers/a2a-client.js'),
  contender(SERVERS.durable, 'minimal', 'clients/form-a.js'),
  contender(SERVERS.floor, 'minimal', 'clients/form-a.js'),
];

/** `--against COMMIT`: the relay (durable log) as built at another commit, run beside this one's in the same rounds. */
export function relayAt(commit: string, cli: string): Contender {
  const server = relay('relay-against', `assistant-relay at ${commit} (durable log)`, (scratch) => join(scratch, 'relay-against.db'), cli);
  return contender(server, 'minimal', 'clients/form-a.js');
}

/** A started server, with the scratch folder its files go to. */
export interface Running {
  readonly server: Server;
  readonly child: ServerChild;
  readonly base: string;
}

export function scratchDir(): string {
  return mkdtempSync(join(tmpdir(), 'assistant-relay-bench-'));
}

export async function start(server: Server, scratch: string): Promise<Running> {
  const child = await startServer(server.name, server.args(scratch), {
    cwd: scratch,
    stderrPath: join(scratch, `${server.name}.stderr.log`),
    timeoutMs: 30_000,
  });
  return { server, child, base: child.url.origin };
}

export async function stop(running: Running): Promise<void> {
  await stopServer(running.child, 5_000);
}
