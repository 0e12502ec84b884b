/**
 * The plugin's own event log: what it has done with each job, one type per fact, so that a restart (a
 * SIGKILL mid-job included) knows exactly where every job stands. Each job's facts are folded by the
 * plugin-job statechart (plugin-job.ts); the forgetting events by the plugin's fold (engine/reasoning/plugin-log.ts).
 *
 * The shapes are those the plugin has always logged (an older log folds as it did); `plugin.job_refused`
 * is newer, so an older log just never has one.
 */
import type { JobResultBody } from '../../protocol/index.js';

interface PluginJobFact {
  readonly job_id: string;
  readonly at: number;
}

/** A job frame arrived for the first time: the envelope as received, and the stream cursor that carried it. */
export interface PluginJobReceived extends PluginJobFact {
  readonly type: 'plugin.job_received';
  readonly job: Record<string, unknown>;
  readonly cursor?: string;
}

/** The backend accepted that the plugin runs the job; the reasoner starts. */
export interface PluginJobStarted extends PluginJobFact {
  readonly type: 'plugin.job_started';
}

/** The backend refused this plugin (403) when it asked to run the job (PROTOCOL.md 6e.7): it waits, unrun and open, to be sent again. */
export interface PluginJobRefused extends PluginJobFact {
  readonly type: 'plugin.job_refused';
}

/** The job's outcome, a result or a failure, to be posted. */
export interface PluginJobFinished extends PluginJobFact {
  readonly type: 'plugin.job_finished';
  readonly outcome: JobResultBody;
}

/** Why nothing more is owed for a job (`PluginJobClosed`). */
export type PluginJobCloseReason = 'posted' | 'settled' | 'gave_up' | 'rejected';

/**
 * Nothing more is owed for the job: `posted` (the backend took the outcome), `settled` (it ended otherwise:
 * cancelled, expired, another result), `gave_up` (the deadline passed while the backend could not be
 * reached), `rejected` (any other refusal: a bug or a misconfiguration, logged).
 */
export interface PluginJobClosed extends PluginJobFact {
  readonly type: 'plugin.job_closed';
  readonly reason: PluginJobCloseReason;
  /** The backend's answer, when there was one. */
  readonly status?: number;
}

/**
 * Retention: the records of closed jobs are forgotten (their events may then be removed from the log).
 * `dedupe` is every forgotten job whose deadline had not passed, with its deadline: the backend sending
 * one again before then is not run. It stands for the `dedupe` of the forgetting event before it.
 */
export interface PluginJobsForgotten {
  readonly type: 'plugin.jobs_forgotten';
  readonly job_ids: readonly string[];
  readonly dedupe: Readonly<Record<string, number>>;
  readonly at: number;
}

/** The facts of one job. */
export type PluginJobEvent = PluginJobReceived | PluginJobStarted | PluginJobRefused | PluginJobFinished | PluginJobClosed;

export type PluginEvent = PluginJobEvent | PluginJobsForgotten;

/** The stream of the forgetting events; every other event is its job's (a job id is a UUID). */
export const PLUGIN_FORGOTTEN_STREAM = 'forgotten';

export function pluginStreamOf(event: PluginEvent): string {
  return event.type === 'plugin.jobs_forgotten' ? PLUGIN_FORGOTTEN_STREAM : event.job_id;
}

/** The envelope's `deadline_at` as epoch ms, or `fallback` when it has none that parses. */
export function deadlineOf(job: Record<string, unknown>, fallback: number): number {
  const at = typeof job.deadline_at === 'string' ? Date.parse(job.deadline_at) : Number.NaN;
  return Number.isNaN(at) ? fallback : at;
}
