/**
 * The plugin's own event log: what it has done with each job, one type per fact, so that a restart (a
 * SIGKILL mid-job included) knows exactly where every job stands. The fold is pure: a test drives it with
 * events alone.
 *
 * A job's life here: received → (started →) finished → closed. `finished` holds the outcome to post; a
 * later `finished` replaces it (a result the backend refused as invalid is reported as a failure instead);
 * `closed` says no more POSTs are owed. Retention forgets closed jobs later (retention.ts), all but the
 * ids it still needs to dedupe.
 */
import type { JobResultBody } from '../../protocol/index.js';

interface PluginJobFact {
  readonly job_id: string;
  readonly at: number;
}

/** A job frame arrived for the first time: the envelope as received, and the stream cursor that carried it. */
export interface JobReceived extends PluginJobFact {
  readonly type: 'plugin.job_received';
  readonly job: Record<string, unknown>;
  readonly cursor?: string;
}

/** The backend accepted that the plugin runs the job; the reasoner starts. */
export interface JobStarted extends PluginJobFact {
  readonly type: 'plugin.job_started';
}

/** The job's outcome, a result or a failure, to be posted. */
export interface JobFinished extends PluginJobFact {
  readonly type: 'plugin.job_finished';
  readonly outcome: JobResultBody;
}

/**
 * Nothing more is owed for the job: `posted` (the backend took the outcome), `settled` (it ended otherwise:
 * cancelled, expired, another result), `gave_up` (the deadline passed while the backend could not be
 * reached), `rejected` (any other refusal: a bug or a misconfiguration, logged).
 */
export interface JobClosed extends PluginJobFact {
  readonly type: 'plugin.job_closed';
  readonly reason: 'posted' | 'settled' | 'gave_up' | 'rejected';
  /** The backend's answer, when there was one. */
  readonly status?: number;
}

/**
 * Retention: the records of closed jobs are forgotten (their events may then be removed from the log).
 * `dedupe` is every forgotten job whose deadline had not passed, with its deadline: the backend sending
 * one again before then is not run. It stands for the `dedupe` of the forgetting event before it.
 */
export interface JobsForgotten {
  readonly type: 'plugin.jobs_forgotten';
  readonly job_ids: readonly string[];
  readonly dedupe: Readonly<Record<string, number>>;
  readonly at: number;
}

export type PluginEvent = JobReceived | JobStarted | JobFinished | JobClosed | JobsForgotten;

/** The stream of the forgetting events; every other event is its job's (a job id is a UUID). */
export const PLUGIN_FORGOTTEN_STREAM = 'forgotten';

export function pluginStreamOf(event: PluginEvent): string {
  return event.type === 'plugin.jobs_forgotten' ? PLUGIN_FORGOTTEN_STREAM : event.job_id;
}

export type JobStage = 'received' | 'started' | 'finished' | 'closed';

export interface PluginJob {
  readonly job_id: string;
  readonly stage: JobStage;
  readonly job: Record<string, unknown>;
  /** Epoch ms; the moment of receipt when the envelope had no readable deadline. */
  readonly deadline_at: number;
  readonly outcome?: JobResultBody;
  /** When it was closed. */
  readonly closed_at?: number;
}

/** Every job the plugin has seen and not forgotten, by id; the forgotten ones it still dedupes; the newest stream cursor it logged. */
export interface PluginState {
  readonly jobs: Map<string, PluginJob>;
  /** Forgotten jobs whose deadline had not passed, with their deadline. */
  readonly forgotten: Map<string, number>;
  cursor: string | undefined;
}

export function initialPluginState(): PluginState {
  return { jobs: new Map(), forgotten: new Map(), cursor: undefined };
}

/** The envelope's `deadline_at` as epoch ms, or `fallback` when it has none that parses. */
export function deadlineOf(job: Record<string, unknown>, fallback: number): number {
  const at = typeof job.deadline_at === 'string' ? Date.parse(job.deadline_at) : Number.NaN;
  return Number.isNaN(at) ? fallback : at;
}

/** Folds one event into the state (in place: the plugin's state lives in one process and is never shared). */
export function evolvePlugin(state: PluginState, event: PluginEvent): void {
  if (event.type === 'plugin.jobs_forgotten') {
    for (const id of event.job_ids) state.jobs.delete(id);
    state.forgotten.clear();
    for (const [id, deadline] of Object.entries(event.dedupe)) state.forgotten.set(id, deadline);
    return;
  }
  if (event.type === 'plugin.job_received') {
    state.jobs.set(event.job_id, { job_id: event.job_id, stage: 'received', job: event.job, deadline_at: deadlineOf(event.job, event.at) });
    if (event.cursor !== undefined) state.cursor = event.cursor;
    return;
  }
  const job = state.jobs.get(event.job_id);
  if (job === undefined) return;
  switch (event.type) {
    case 'plugin.job_started':
      state.jobs.set(event.job_id, { ...job, stage: 'started' });
      return;
    case 'plugin.job_finished':
      state.jobs.set(event.job_id, { ...job, stage: 'finished', outcome: event.outcome });
      return;
    case 'plugin.job_closed':
      state.jobs.set(event.job_id, { ...job, stage: 'closed', closed_at: event.at });
  }
}
