/**
 * A CPU quota for one process, through a child cgroup of the v1 `cpu` controller
 * (/sys/fs/cgroup/cpu/assistant-relay-bench-<pid>-<name>): the scale-out scenario holds every backend
 * node to the same share of a core, so that adding nodes is what adds CPU, not the machine's spare
 * cores. Every cgroup made here is removed when it is released, and also when the bench exits any other
 * way (its processes moved back to the root first, since a cgroup with processes cannot be removed).
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup/cpu';
const PERIOD_US = 100_000;

/** How often the quota held the process back, from the cgroup's cpu.stat. */
export interface Throttling {
  readonly periods: number;
  readonly throttled: number;
}

export interface CpuCgroup {
  readonly path: string;
  /** Moves the process (all its threads) into the cgroup. */
  hold(pid: number): void;
  throttling(): Throttling;
  /** Moves its processes back to the root and removes the cgroup; idempotent. */
  release(): void;
}

const made = new Set<CpuCgroup>();
process.on('exit', () => {
  for (const cgroup of made) cgroup.release();
});

/** Why no quota can be set here (not root, no v1 `cpu` controller), or undefined when it can. */
export function cpuQuotaUnavailable(): string | undefined {
  if (!existsSync(join(ROOT, 'cpu.cfs_quota_us'))) return `no cgroup v1 cpu controller at ${ROOT}`;
  const probe = join(ROOT, `assistant-relay-bench-${process.pid}-probe`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return undefined;
  } catch (error) {
    return `cannot make a cgroup under ${ROOT}: ${(error as Error).message}`;
  }
}

/** A new cgroup whose processes may use `cores` of a core (0.15: 15 ms of CPU each 100 ms). */
export function cpuCgroup(name: string, cores: number): CpuCgroup {
  if (!(cores > 0)) throw new RangeError(`a CPU quota is a positive share of a core, not ${cores}`);
  const path = join(ROOT, `assistant-relay-bench-${process.pid}-${name}`);
  mkdirSync(path);
  let released = false;
  const cgroup: CpuCgroup = {
    path,
    hold(pid) {
      writeFileSync(join(path, 'cgroup.procs'), String(pid));
    },
    throttling() {
      const stat = readFileSync(join(path, 'cpu.stat'), 'utf8');
      const field = (key: string) => Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(stat)?.[1] ?? Number.NaN);
      return { periods: field('nr_periods'), throttled: field('nr_throttled') };
    },
    release() {
      if (released) return;
      released = true;
      made.delete(cgroup);
      try {
        const pids = readFileSync(join(path, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
        for (const pid of pids) {
          try {
            writeFileSync(join(ROOT, 'cgroup.procs'), pid);
          } catch {
            // The process exited between the read and the move: nothing holds the cgroup any more.
          }
        }
        rmdirSync(path);
      } catch (error) {
        console.error(`bench: could not remove the cgroup ${path}: ${(error as Error).message}`);
      }
    },
  };
  made.add(cgroup);
  try {
    writeFileSync(join(path, 'cpu.cfs_period_us'), String(PERIOD_US));
    writeFileSync(join(path, 'cpu.cfs_quota_us'), String(Math.round(cores * PERIOD_US)));
  } catch (error) {
    cgroup.release();
    throw error;
  }
  return cgroup;
}
