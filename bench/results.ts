/** What `npm run bench` measured: one run's figures, from which BENCHMARKS.md and its charts are written. */
import type { TurnsSample } from './scenarios/turns.js';

/** A median over rounds, with the rounds' least and most. */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

export function spread(values: readonly number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN };
  return { median: sorted[Math.floor((sorted.length - 1) / 2)]!, min: sorted[0]!, max: sorted.at(-1)! };
}

export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly os: string;
  readonly node: string;
  /** ISO date and time the run started. */
  readonly date: string;
  /** `npm run bench -- --quick`: short slices, the figures are only a smoke test. */
  readonly quick: boolean;
  readonly versions: readonly string[];
}

export interface ResumeRow {
  readonly server: string;
  /** Turns the client was away for. */
  readonly away: number;
  /** From opening the stream again to having read all it will get. */
  readonly catchUpMs?: Spread;
  /** Bytes the server sent on the resumed stream. */
  readonly bytes?: number;
  /** Replies read on the resumed stream; those it was told it missed (named); those gone without a word. */
  readonly replayed?: number;
  readonly missed?: number;
  readonly lost?: number;
  /** Why there is no figure (the protocol has no way to resume), or what the figures mean. */
  readonly note?: string;
}

export interface IdleRow {
  readonly server: string;
  readonly streams: number;
  /** Resident memory the server grew by, per open stream. */
  readonly kibPerStream?: number;
  readonly note?: string;
}

export interface RestartRow {
  readonly events: number;
  readonly snapshots: boolean;
  /** From `createAssistantHost` to its resolution: the log folded (from its newest snapshot, or whole), the host's start events logged. */
  readonly toServeMs: Spread;
  /** Events a second `replay` folds on this log. */
  readonly replayPerSecond: Spread;
}

export interface LogRow {
  /** `one event a commit`, `100 events a commit`. */
  readonly mode: string;
  readonly eventsPerSecond: Spread;
}

export interface JobsRow {
  /** Where the backend keeps its jobs, on how many nodes, or a baseline (rows of runs before it are the embedded one's). */
  readonly setup?: string;
  readonly concurrency: number;
  readonly jobsPerSecond: Spread;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** CPU (user + system) per job over the measured rounds, µs: the server's processes together, and the plugin's own process (absent for the baselines' plugin, in the bench process). Absent from runs before issue 26. */
  readonly serverCpuUsPerJob?: number;
  readonly pluginCpuUsPerJob?: number;
}

export interface HostileRow {
  /** `none` (the baseline), or the attack the hostile tenant ran (bench/scenarios/hostile.ts). */
  readonly attack: string;
  /** The attack in words. */
  readonly what: string;
  /** How long the phase ran, attack and quiet tenant together, in seconds. */
  readonly seconds: number;
  /** The quiet tenant's jobs: completed, their latency (create to completed view), and those that failed (a refusal, a timeout). */
  readonly quiet: {
    readonly completed: number;
    readonly p50Ms: number;
    readonly p99Ms: number;
    readonly errors: number;
    readonly firstError?: string;
  };
  /** What the attacker's requests were answered: `step status` → count (`create 201`, `join 429`, `result EPIPE`). */
  readonly attacker: Readonly<Record<string, number>>;
  /** A pairing started, joined and aborted from another source address after the attack: each step's status. */
  readonly bystander: string;
  /** The backend after the phase: resident memory, its log's files (database and WAL), the events the log holds and how many the phase added. */
  readonly rssMiB: number;
  readonly logMiB: number;
  readonly events: number;
  readonly eventsAdded: number;
}

export interface ScaleoutRow {
  /** Backend nodes, each held to `quota` of a core. */
  readonly nodes: number;
  readonly quota: number;
  readonly integrations: number;
  /** Jobs each integration's client keeps in flight. */
  readonly inFlight: number;
  readonly jobsPerSecond: Spread;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The nodes' CPU (user + system, summed over the nodes) per job, over the measured rounds. */
  readonly nodeCpuUsPerJob: number;
  /** The nodes' CPU over the measured time, in cores (at most nodes × quota). */
  readonly nodeCores: number;
  /** Share of the quota's periods in which a node was held back (all nodes together). */
  readonly throttledShare: number;
  /** The machine's busy cores while measuring (/proc/stat), of `cores`. */
  readonly busyCores: Spread;
  readonly cores: number;
  /** The bench process (every client) in cores. */
  readonly generatorCores: number;
  /** The plugin processes together, in cores. */
  readonly pluginCores: number;
  /** Jobs the clients created, and in the store: those that ended exactly once, never, more than once; terminal events not `job.completed`. */
  readonly jobs: number;
  readonly endedOnce: number;
  readonly neverEnded: number;
  readonly endedTwice: number;
  readonly notCompleted: number;
}

export interface ScaleoutResults {
  readonly rows: readonly ScaleoutRow[];
  /** Why the scenario did not run (no writable cgroup): said, not failed. */
  readonly skipped?: string;
  /** How the clients and plugins reach the nodes, in words. */
  readonly routing: string;
  /** `NATS` or `Redis Streams`. */
  readonly broker: string;
}

export interface MemoryRow {
  /** Integrations in the store, and those made active (a stream held open, a job completed). */
  readonly stored: number;
  readonly active: number;
  /** Seeding the store, and making the integrations active. */
  readonly seedMs: number;
  readonly activateMs: number;
  /** The node's resident memory once started, and once the integrations were active and it settled. */
  readonly startRssMiB: number;
  readonly rssMiB: number;
  /** Its V8 heap in use then, and the integrations it held and counted online (its /metrics). */
  readonly heapUsedMiB: number;
  readonly held: number;
  readonly online: number;
}

export interface MemoryResults {
  /** The first the baseline (the store holding only the active integrations). */
  readonly rows: readonly MemoryRow[];
}

export interface BenchResults {
  readonly machine: Machine;
  /** By session count. */
  readonly turns: ReadonlyArray<{ readonly sessions: number; readonly samples: readonly TurnsSample[] }>;
  readonly resume: readonly ResumeRow[];
  readonly idle: readonly IdleRow[];
  readonly restart: readonly RestartRow[];
  readonly log: readonly LogRow[];
  readonly jobs: readonly JobsRow[];
  /** Absent from runs before issue 23. */
  readonly hostile?: readonly HostileRow[];
  /** Absent from runs before issue 25. */
  readonly scaleout?: ScaleoutResults;
  /** Absent from runs before issue 25's memory target. */
  readonly memory?: MemoryResults;
  /** Scenarios that failed as a whole, with why. */
  readonly failures: readonly string[];
}
