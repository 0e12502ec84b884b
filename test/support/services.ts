/**
 * Services of a test's own, for tests that stop and restart them: a PostgreSQL cluster (initdb in a
 * folder, run as the `postgres` user, on a free loopback port), a NATS server with JetStream, a Redis.
 * Restarting the machine's shared services would break the tests running beside.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { tempDir } from './host.js';

/** A free port on loopback (free when asked: good enough for a test's own server). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const PG_BIN = join('/usr/lib/postgresql', readdirSync('/usr/lib/postgresql').sort().at(-1)!, 'bin');

function asPostgres(tool: string, args: readonly string[]): void {
  execFileSync('runuser', ['-u', 'postgres', '--', join(PG_BIN, tool), ...args], { stdio: 'pipe' });
}

export interface OwnService {
  readonly url: string;
  /** Stops it (fast: connections are cut) and starts it again on the same port and data. */
  restart(options?: { readonly downMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

export async function ownPostgres(): Promise<OwnService> {
  const dir = tempDir();
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  mkdirSync(data, { mode: 0o700 });
  execFileSync('chown', ['postgres', data]);
  asPostgres('initdb', ['-D', data, '--auth=trust', '-U', 'postgres', '--no-sync']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const start = () => asPostgres('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
  const stop = () => asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async restart({ downMs = 0 } = {}) {
      stop();
      await new Promise((resolve) => setTimeout(resolve, downMs));
      start();
    },
    async stop() {
      stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A server process of the test's own, restarted by killing it and starting the same command again. */
async function ownProcess(command: string, args: (port: number) => string[], scheme: string, dir?: string): Promise<OwnService> {
  const port = await freePort();
  let child: ChildProcess;
  const start = async () => {
    child = spawn(command, args(port), { stdio: 'ignore' });
    await untilListening(port);
  };
  const stop = async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url: `${scheme}://127.0.0.1:${port}`,
    async restart({ downMs = 0 } = {}) {
      await stop();
      await new Promise((resolve) => setTimeout(resolve, downMs));
      await start();
    },
    async stop() {
      await stop();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function ownNats(): Promise<OwnService> {
  const dir = tempDir();
  return ownProcess('nats-server', (port) => ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], 'nats', dir);
}

export function ownRedis(): Promise<OwnService> {
  return ownProcess('redis-server', (port) => ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'], 'redis');
}

async function untilListening(port: number): Promise<void> {
  const { connect } = await import('node:net');
  for (const since = Date.now(); Date.now() - since < 10_000; await new Promise((resolve) => setTimeout(resolve, 50))) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
  }
  throw new Error(`nothing listens on ${port}`);
}
