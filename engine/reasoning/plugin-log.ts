/**
 * The fold of the assistant plugin's own log: each job's statechart (machines/reasoning/plugin-job.ts),
 * stepped by the plugin-job decider's `evolve`; the ids retention forgot but still dedupes; the newest
 * stream cursor. The plugin folds its log with it at start and each event as it appends it; `replay` and
 * the inspector fold a plugin's log with it too. Retention's choice of what to forget reads it here as well.
 * No I/O, no clock: a test drives it with events alone.
 */
import {
  FORGOTTEN,
  pluginJobDecider,
  type PluginJobCommand,
  type PluginJobOutcome,
  type PluginJobState,
} from '../../machines/reasoning/plugin-job-decider.js';
import type { PluginEvent, PluginJobEvent, PluginJobsForgotten } from '../../machines/reasoning/plugin-job-events.js';
import type { PluginJobSnapshot } from '../../machines/reasoning/plugin-job.js';
import type { Decision } from '../../machines/core/decider.js';

/** Every job the plugin has seen and not forgotten, by id; the forgotten ones it still dedupes; the newest stream cursor it logged. */
export interface PluginState {
  readonly jobs: Map<string, PluginJobSnapshot>;
  /** Forgotten jobs whose deadline had not passed, with their deadline. */
  readonly forgotten: Map<string, number>;
  cursor: string | undefined;
}

export function initialPluginState(): PluginState {
  return { jobs: new Map(), forgotten: new Map(), cursor: undefined };
}

/** What the decider knows of a job: its snapshot, `FORGOTTEN`, or nothing. */
export function pluginJobState(state: PluginState, job_id: string): PluginJobState {
  return state.jobs.get(job_id) ?? (state.forgotten.has(job_id) ? FORGOTTEN : undefined);
}

/** Folds one event into the state (in place: the plugin's state lives in one process and is never shared). */
export function evolvePlugin(state: PluginState, event: PluginEvent): void {
  if (event.type === 'plugin.jobs_forgotten') {
    for (const id of event.job_ids) state.jobs.delete(id);
    state.forgotten.clear();
    for (const [id, deadline] of Object.entries(event.dedupe)) state.forgotten.set(id, deadline);
    return;
  }
  state.jobs.set(event.job_id, pluginJobDecider.evolve(pluginJobState(state, event.job_id), event) as PluginJobSnapshot);
  if (event.type === 'plugin.job_received' && event.cursor !== undefined) state.cursor = event.cursor;
}

/** What a command means for its job, as the state stands. */
export function decidePluginJob(state: PluginState, command: PluginJobCommand): Decision<PluginJobEvent, PluginJobOutcome> {
  return pluginJobDecider.decide(command, pluginJobState(state, command.job_id));
}

/**
 * What retention's next forgetting event names (adapters/plugin/retention.ts): closed jobs (at most `max`)
 * closed before `closedBefore`, and the dedupe entries kept after it (each forgotten job's until its deadline).
 */
export function forgettableJobs(
  state: PluginState,
  closedBefore: number,
  now: number,
  max: number,
): { readonly event: Omit<PluginJobsForgotten, 'type' | 'at'>; readonly count: number } {
  const job_ids: string[] = [];
  const dedupe: Record<string, number> = {};
  let expired = 0;
  for (const [id, deadline] of state.forgotten) {
    if (deadline > now) dedupe[id] = deadline;
    else expired += 1;
  }
  for (const [id, job] of state.jobs) {
    if (job_ids.length === max) break;
    const { closed_at, deadline_at } = job.context;
    if (closed_at === undefined || closed_at >= closedBefore) continue;
    job_ids.push(id);
    if (deadline_at > now) dedupe[id] = deadline_at;
  }
  return { event: { job_ids, dedupe }, count: job_ids.length + expired };
}
