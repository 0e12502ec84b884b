/**
 * What the backend's fold holds (`BackendState`, what a snapshot stores), and its partitions: the state of
 * one integration (its integration, jobs, stream position, profile, holder, counts) and the service's own
 * (pairings, their handles, tickets). A node holds the partitions it serves; each is snapshotted, loaded
 * and evicted whole (ARCHITECTURE.md, "Several nodes, one service").
 */
import type { IntegrationSnapshot } from '../../machines/reasoning/integration.js';
import type { JobSnapshot } from '../../machines/reasoning/job.js';
import type { PairingSnapshot } from '../../machines/reasoning/pairing.js';
import type { WindowCount } from '../../machines/reasoning/quotas.js';
import type { CapabilityProfile } from '../../protocol/index.js';

/** An integration's current capability profile (2.4): the result of its latest completed plain probe. */
export interface ProbedProfile {
  readonly job_id: string;
  readonly completed_at: number;
  readonly profile: CapabilityProfile;
}

/** A pairing ticket the operator issued, until retention forgets it. */
export interface Ticket {
  readonly expires_at: number;
  /** A pairing started with it: it is worth nothing now. */
  readonly used: boolean;
}

/** Everything the backend projection holds: what a snapshot stores (state-codec.ts encodes it). */
export interface BackendState {
  readonly integrations: ReadonlyMap<string, IntegrationSnapshot>;
  readonly jobs: ReadonlyMap<string, JobSnapshot>;
  readonly open: ReadonlyMap<string, ReadonlySet<string>>;
  readonly sent: ReadonlyMap<string, number>;
  readonly profiles: ReadonlyMap<string, ProbedProfile>;
  readonly versions: ReadonlyMap<string, number>;
  readonly pairings: ReadonlyMap<string, PairingSnapshot>;
  readonly handles: ReadonlyMap<string, string>;
  readonly holders: ReadonlyMap<string, string>;
  readonly compactFrom: ReadonlyMap<string, number>;
  readonly tickets: ReadonlyMap<string, Ticket>;
  readonly created: ReadonlyMap<string, WindowCount>;
}

type StateMap = keyof BackendState;

/** The maps keyed by integration id. */
const OF_INTEGRATION: readonly StateMap[] = ['integrations', 'open', 'sent', 'profiles', 'holders', 'compactFrom', 'created'];
/** The maps keyed by a job's `jobKey`, which is its integration's. */
const OF_JOB: readonly StateMap[] = ['jobs', 'versions'];
/** The service partition's maps. */
const OF_SERVICE: readonly StateMap[] = ['pairings', 'handles', 'tickets'];

/** A state with nothing in it: a fresh fold's. */
export function emptyState(): BackendState {
  return Object.fromEntries([...OF_INTEGRATION, ...OF_JOB, ...OF_SERVICE].map((name) => [name, new Map()])) as unknown as BackendState;
}

/** One integration's partition of `state`: its entries alone, its jobs' named by `jobKeys`. */
export function partitionState(state: BackendState, integrationId: string, jobKeys: Iterable<string>): BackendState {
  const part = emptyState() as unknown as Record<StateMap, Map<string, unknown>>;
  for (const name of OF_INTEGRATION) copyEntry(state[name], part[name], integrationId);
  for (const key of jobKeys) for (const name of OF_JOB) copyEntry(state[name], part[name], key);
  return part as unknown as BackendState;
}

/** The service's partition of `state`: its pairings, their handles and the operator's tickets. */
export function serviceState(state: BackendState): BackendState {
  const part = emptyState() as unknown as Record<StateMap, Map<string, unknown>>;
  for (const name of OF_SERVICE) for (const [key, value] of state[name]) part[name].set(key, value);
  return part as unknown as BackendState;
}

/** Removes one integration's partition from `state`'s maps, its jobs' named by `jobKeys`. */
export function removePartition(state: BackendState, integrationId: string, jobKeys: Iterable<string>): void {
  const maps = state as unknown as Record<StateMap, Map<string, unknown>>;
  for (const name of OF_INTEGRATION) maps[name].delete(integrationId);
  for (const key of jobKeys) for (const name of OF_JOB) maps[name].delete(key);
}

function copyEntry(from: ReadonlyMap<string, unknown>, to: Map<string, unknown>, key: string): void {
  const value = from.get(key);
  if (value !== undefined) to.set(key, value instanceof Set ? new Set(value) : value);
}
