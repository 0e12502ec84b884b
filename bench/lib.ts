/** Small helpers shared by the bench: server child processes, their CPU time, percentiles. */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

export interface ServerChild {
  readonly name: string;
  readonly child: ChildProcess;
  readonly url: URL;
  /** Where the child's stderr goes: a file, so the bench process spends nothing draining its logs. */
  readonly stderrPath: string;
}

const live = new Set<ChildProcess>();
// Whatever way the bench ends, no server outlives it.
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});
// A signal would end the bench without 'exit'; turn it into an exit so the children go too.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => process.exit(130));

/** Starts a server child and resolves once it prints {"listening": url} on stdout. */
export function startServer(
  name: string,
  args: readonly string[],
  options: { cwd: string; stderrPath: string; timeoutMs: number },
): Promise<ServerChild> {
  const stderrFd = openSync(options.stderrPath, 'w');
  const child = spawn(process.execPath, args, { cwd: options.cwd, stdio: ['ignore', 'pipe', stderrFd] });
  closeSync(stderrFd);
  live.add(child);
  child.on('exit', () => live.delete(child));
  return new Promise((resolve, reject) => {
    let out = '';
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${name}: ${why}\n--- stderr (tail) ---\n${tail(options.stderrPath)}`));
    };
    const timer = setTimeout(() => fail(`not listening after ${options.timeoutMs} ms`), options.timeoutMs);
    child.once('exit', (code, signal) => fail(`exited (${code ?? signal}) before listening`));
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      out += chunk;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.on('exit', () => live.delete(child));
      try {
        const { listening } = JSON.parse(out.slice(0, nl)) as { listening: string };
        resolve({ name, child, url: new URL(listening), stderrPath: options.stderrPath });
      } catch {
        fail(`unexpected first stdout line ${JSON.stringify(out.slice(0, nl))}`);
      }
    });
  });
}

/** SIGTERM, then SIGKILL if it has not exited within `graceMs`. Resolves with how it ended. */
export function stopServer(server: Pick<ServerChild, 'child'>, graceMs: number): Promise<string> {
  const { child } = server;
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve(`already exited (${child.exitCode ?? child.signalCode})`);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, graceMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(signal === null ? `exit ${code}` : `signal ${signal}`);
    });
    child.kill('SIGTERM');
  });
}

export function tail(path: string, bytes = 2000): string {
  try {
    const text = readFileSync(path, 'utf8');
    return text.slice(-bytes);
  } catch {
    return '(no stderr file)';
  }
}

let clockTicks: number | undefined;
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** User + system CPU milliseconds a process has used so far (Linux /proc), or undefined elsewhere. */
export function processCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond();
  } catch {
    return undefined;
  }
}

/** The machine's CPU time so far, busy and in all, in ticks (the first line of /proc/stat): two readings' difference gives its busy cores. */
export function machineTicks(): { busy: number; total: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
  // user nice system idle iowait irq softirq steal (guest time is counted in user already).
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields.map(Number) as number[];
  const busy = user! + nice! + system! + irq! + softirq! + (steal ?? 0);
  return { busy, total: busy + idle! + iowait! };
}

/** Resident memory of a process (Linux /proc), in KiB. */
export function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (match === null) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]);
}

/** Nearest-rank percentile of an ascending-sorted array. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}
