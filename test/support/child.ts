/**
 * The built CLI as a real child process, for tests: `serve` waits for its one stdout line
 * `{"listening":"http://H:PORT"}`, collects stdout and stderr, and can signal it and wait for its exit.
 * `AppendChild` runs append-child.mjs, a process that holds an event log and keeps appending to it.
 * Children still running when a test ends are SIGKILLed by `killChildren()` (call it in `afterEach`), so
 * a failed test never leaves a server behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach } from 'vitest';
import { tempDir } from './host.js';

export const CLI = fileURLToPath(new URL('../../dist/adapters/cli/main.js', import.meta.url));
const APPEND_CHILD = fileURLToPath(new URL('./append-child.mjs', import.meta.url));

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface CliResult extends Exit {
  readonly stdout: string;
  readonly stderr: string;
}

const live = new Set<ChildProcess>();

/** The test runner's environment without ASSISTANT_RELAY_* (so only what a test sets reaches the CLI). */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('ASSISTANT_RELAY_')) env[key] = value;
  return { ...env, ...extra };
}

export function start(args: readonly string[], env: Record<string, string>, script = CLI, { terminal = false } = {}) {
  const command = [process.execPath, script, ...args];
  // On a terminal: util-linux `script` runs it on a pseudo-terminal fed from our pipe (what is written to
  // `child.stdin` is typed there); its stdout and stderr both come out on stdout, with \r\n.
  const child = terminal
    ? spawn(
        'script',
        ['--quiet', '--return', '--command', command.map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(' '), '/dev/null'],
        { env: childEnv(env), stdio: ['pipe', 'pipe', 'pipe'] },
      )
    : spawn(command[0]!, command.slice(1), { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  const output = { stdout: '', stderr: '' };
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output.stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output.stderr += chunk));
  // 'close' (not 'exit'): by then both pipes are drained, so the output is complete.
  const exited = new Promise<Exit>((resolve) => {
    child.on('close', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });
  return { child, output, exited };
}

/** A child `start` started: the process, what it printed so far, and its exit once its output is read. */
export type Running = ReturnType<typeof start>;

/**
 * Resolves, parsed, with the first line `running` (`assistant-relay NAME …`) prints on stdout. If it exits
 * first, or `timeoutMs` passes, fails with what it said (its exit, its stderr), how long it was waited
 * for, and what `context` adds (e.g. the tail of a server's log that it was talking to).
 */
export async function firstLine(
  running: Running,
  name: string,
  { timeoutMs = 15_000, context = () => '' }: { readonly timeoutMs?: number; readonly context?: () => string } = {},
): Promise<Record<string, unknown>> {
  const { output, exited } = running;
  const since = Date.now();
  const failure = (what: string) => {
    const more = context();
    return new Error(
      `${name} ${what} after ${Date.now() - since} ms; stdout ${JSON.stringify(output.stdout.slice(0, 2_000))}; ` +
        `stderr ${JSON.stringify(output.stderr.slice(-4_000))}${more === '' ? '' : `; ${more}`}`,
    );
  };
  let exit: Exit | undefined;
  void exited.then((settled) => (exit = settled));
  while (!output.stdout.includes('\n')) {
    if (exit !== undefined) throw failure(`exited (code ${exit.code}, signal ${exit.signal}) without a line on stdout`);
    if (Date.now() - since > timeoutMs) throw failure('printed no line on stdout');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 20))]);
  }
  return JSON.parse(output.stdout.slice(0, output.stdout.indexOf('\n'))) as Record<string, unknown>;
}

/** Starts `assistant-relay ARGS` (a `backend` or a `plugin`) and resolves once it has printed its first stdout line, with that line parsed. */
export async function started(args: readonly string[], env: Record<string, string> = {}) {
  const running = start(args, env);
  return { ...running, line: await firstLine(running, args[0]!) };
}

/** Runs the CLI to its end, e.g. to see how it refuses bad flags. */
export async function runCli(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  const { output, exited } = start(args, env);
  const exit = await exited;
  return { ...exit, ...output };
}

export class ServeChild {
  private constructor(
    readonly url: string,
    private readonly child: ChildProcess,
    private readonly output: { stdout: string; stderr: string },
    /** Resolves when the process has exited and its output is read. */
    readonly exited: Promise<Exit>,
  ) {}

  get pid(): number {
    return this.child.pid!;
  }

  get stdout(): string {
    return this.output.stdout;
  }

  get stderr(): string {
    return this.output.stderr;
  }

  /** Sends `signal` and waits for the exit. */
  async stop(signal: 'SIGTERM' | 'SIGKILL' | 'SIGINT'): Promise<Exit> {
    this.child.kill(signal);
    return this.exited;
  }

  /** Starts `assistant-relay serve ARGS` and resolves once it has printed where it listens. */
  static async start(args: readonly string[], options: { env?: Record<string, string> } = {}): Promise<ServeChild> {
    const { child, output, exited } = start(['serve', ...args], options.env ?? {});
    const url = await new Promise<string>((resolve, reject) => {
      let settled = false;
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(new Error(`serve ${why}; stdout ${JSON.stringify(output.stdout)}; stderr ${output.stderr.slice(0, 4000)}`));
      };
      const timer = setTimeout(() => fail('did not print its listening line in time'), 10_000);
      const onData = () => {
        const end = output.stdout.indexOf('\n');
        if (end < 0 || settled) return;
        let listening: unknown;
        try {
          listening = (JSON.parse(output.stdout.slice(0, end)) as { listening?: unknown }).listening;
        } catch {
          listening = undefined;
        }
        if (typeof listening !== 'string') return fail('printed something other than its listening line');
        settled = true;
        clearTimeout(timer);
        resolve(listening);
      };
      child.stdout!.on('data', onData);
      void exited.then((exit) => fail(`exited (${exit.code ?? exit.signal}) before listening`));
    });
    return new ServeChild(url, child, output, exited);
  }
}

/** append-child.mjs on an event log file: it holds the log and appends batches until it is killed. */
export class AppendChild {
  private constructor(
    private readonly child: ChildProcess,
    private readonly output: { stdout: string; stderr: string },
    /** Resolves when the process has exited and its output is read. */
    readonly exited: Promise<Exit>,
  ) {}

  get pid(): number {
    return this.child.pid!;
  }

  /** Starts appending batches of `batch` events to the log at `path`. */
  static start(path: string, batch: number): AppendChild {
    const { child, output, exited } = start([path, String(batch)], {}, APPEND_CHILD);
    return new AppendChild(child, output, exited);
  }

  /**
   * Resolves, with the count it printed, once the child has confirmed at least `count` events: it prints
   * a count only after those appends resolved, so each is a promise of durability.
   */
  until(count: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const check = () => {
        // The piece after the last newline may be a partial count.
        const last = Number(this.output.stdout.slice(0, this.output.stdout.lastIndexOf('\n')).split('\n').at(-1) || 0);
        if (last < count) return;
        this.child.stdout!.off('data', check);
        resolve(last);
      };
      this.child.stdout!.on('data', check);
      void this.exited.then(() => reject(new Error(`append child exited before confirming ${count} events: ${this.output.stderr}`)));
      check();
    });
  }

  async kill(): Promise<Exit> {
    this.child.kill('SIGKILL');
    return this.exited;
  }
}

/** SIGKILLs every child a test started and left running, and waits until they are gone. */
export async function killChildren(): Promise<void> {
  const running = [...live];
  for (const child of running) child.kill('SIGKILL');
  await Promise.all(running.map((child) => new Promise((resolve) => child.once('close', resolve))));
}

/**
 * For a test file whose tests start children: a fresh folder per test, and afterwards every child
 * killed and the folder removed. Returns the current test's folder.
 */
export function useChildFolder(): () => string {
  let dir: string | undefined;
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(async () => {
    await killChildren();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });
  return () => dir!;
}
