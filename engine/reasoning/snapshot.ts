/** What a backend's snapshot holds: the backend projection's state (integrations, jobs, pairings and their indexes). */
import { integrationMachine } from '../../machines/reasoning/integration.js';
import { jobMachine } from '../../machines/reasoning/job.js';
import { pairingMachine } from '../../machines/reasoning/pairing.js';
import type { SnapshotCodec } from '../core/snapshots.js';
import { decodeState, encodeInParts, type Encoded } from '../core/state-codec.js';
import type { BackendProjection } from './projection.js';
import type { BackendState } from './backend-state.js';

const MACHINES = { job: jobMachine, integration: integrationMachine, pairing: pairingMachine };

/**
 * Bumped when what a snapshot holds changes shape: an older one is then passed over and the log refolded.
 * Format 2 (issue 23): jobs keyed by integration and `job_id`, the stream holders, the compaction marks,
 * the pairing tickets, and integrations that know whether they were paired and when they asked for keys.
 */
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
      const copy = Object.fromEntries(
        Object.entries(state).map(([name, map]) => [name, new Map(map as ReadonlyMap<string, unknown>)]),
      ) as unknown as BackendState;
      // Each integration's set of open jobs is updated in place; every other value is replaced whole.
      return { ...copy, open: new Map([...state.open].map(([id, jobs]) => [id, new Set(jobs)])) };
    },
    encode: (state) => encodeInParts({ format: FORMAT, kind: 'backend' }, { ...state }),
    decode(data) {
      const snapshot = JSON.parse(data) as Partial<BackendSnapshot>;
      if (snapshot.kind !== 'backend' || snapshot.format !== FORMAT) throw new Error(`it is not a backend snapshot of format ${FORMAT}`);
      return decodeState(snapshot.state!, MACHINES) as BackendState;
    },
  };
}
