/** What a backend's snapshot holds: the backend projection's state (integrations, jobs, pairings and their indexes). */
import { integrationMachine } from '../../machines/integration.js';
import { jobKey } from '../../machines/job-events.js';
import { jobMachine, type JobSnapshot } from '../../machines/job.js';
import { pairingMachine } from '../../machines/pairing.js';
import type { SnapshotCodec } from '../snapshots.js';
import { decodeState, encodeInParts, type Encoded } from '../state-codec.js';
import type { BackendProjection, BackendState } from './projection.js';

const MACHINES = { job: jobMachine, integration: integrationMachine, pairing: pairingMachine };

/** Bumped when what a snapshot holds changes shape: an older one is then refolded from the log, or read as `fromFormat1` reads it. */
const FORMAT = 2;

interface BackendSnapshot {
  readonly format: number;
  readonly kind: 'backend';
  readonly state: Encoded;
}

export function backendSnapshotCodec(projection: BackendProjection): SnapshotCodec<BackendState> {
  return {
    capture() {
      const state = projection.state();
      const copy = Object.fromEntries(Object.entries(state).map(([name, map]) => [name, new Map(map as ReadonlyMap<string, unknown>)])) as unknown as BackendState;
      // Each integration's set of open jobs is updated in place; every other value is replaced whole.
      return { ...copy, open: new Map([...state.open].map(([id, jobs]) => [id, new Set(jobs)])) };
    },
    encode: (state) => encodeInParts({ format: FORMAT, kind: 'backend' }, { ...state }),
    decode(data) {
      const snapshot = JSON.parse(data) as Partial<BackendSnapshot>;
      if (snapshot.kind !== 'backend' || (snapshot.format !== FORMAT && snapshot.format !== 1)) throw new Error(`it is not a backend snapshot of format ${FORMAT}`);
      const state = decodeState(snapshot.state!, MACHINES) as BackendState;
      return snapshot.format === 1 ? fromFormat1(state) : state;
    },
  };
}

/**
 * Format 1 keyed jobs and their versions by `job_id` alone, from when a `job_id` was the whole service's
 * (each id one job): keyed by `jobKey` now, the state is the one format 2 holds.
 */
function fromFormat1(state: BackendState): BackendState {
  const keyOf = (job: JobSnapshot) => jobKey(job.context.integration_id, job.context.job_id);
  const jobs = new Map([...state.jobs.values()].map((job) => [keyOf(job), job]));
  const versions = new Map([...state.versions].map(([jobId, version]) => [keyOf(state.jobs.get(jobId)!), version]));
  return { ...state, jobs, versions };
}
