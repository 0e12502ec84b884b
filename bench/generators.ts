/** The bench's side of the load generator processes (bench/load.ts): start, ask, wait for the answer. */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ClientRef } from './clients/ref.js';
import type { FromLoad, ToLoad } from './load.js';

const LOAD = fileURLToPath(new URL('./load.ts', import.meta.url));
/** Opening a thousand sessions, or a run and its drain, is given this long before the bench gives up. */
const ANSWER_TIMEOUT_MS = 120_000;

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export class Generator {
  private readonly child: ChildProcess;
  private waiting: { resolve: (message: FromLoad) => void; reject: (error: Error) => void } | undefined;

  constructor(readonly label: string) {
    this.child = fork(LOAD, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    live.add(this.child);
    this.child.on('message', (message: FromLoad) => {
      const waiting = this.waiting;
      this.waiting = undefined;
      if (message.type === 'failed') waiting?.reject(new Error(`${label}: ${message.message}`));
      else waiting?.resolve(message);
    });
    this.child.on('exit', (code, signal) => {
      live.delete(this.child);
      this.waiting?.reject(new Error(`${label}: the load generator exited (${code ?? signal})`));
      this.waiting = undefined;
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  ask<Type extends FromLoad['type']>(message: ToLoad, expect: Type): Promise<Extract<FromLoad, { type: Type }>> {
    if (this.waiting !== undefined) return Promise.reject(new Error(`${this.label}: asked twice at once`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = undefined;
        reject(new Error(`${this.label}: no answer to ${message.type} after ${ANSWER_TIMEOUT_MS} ms`));
      }, ANSWER_TIMEOUT_MS);
      this.waiting = {
        resolve: (answer) => {
          clearTimeout(timer);
          if (answer.type === expect) resolve(answer as Extract<FromLoad, { type: Type }>);
          else reject(new Error(`${this.label}: answered ${answer.type} to ${message.type}`));
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.child.send(message);
    });
  }

  open(client: ClientRef, base: string, sessions: number): Promise<unknown> {
    return this.ask({ type: 'open', client, base, sessions }, 'opened');
  }

  run(ms: number, measure: boolean) {
    return this.ask({ type: 'run', ms, measure }, 'ran');
  }

  idle(client: ClientRef, base: string, streams: number) {
    return this.ask({ type: 'idle', client, base, streams }, 'held');
  }

  /** Closes its sessions and streams; it stays, for the next ones. */
  release(): Promise<unknown> {
    return this.ask({ type: 'release' }, 'released');
  }

  /** Asks it to close its sessions and exit; kills it if it has not within a few seconds. */
  close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
      this.child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      this.child.send({ type: 'close' } satisfies ToLoad);
    });
  }
}
