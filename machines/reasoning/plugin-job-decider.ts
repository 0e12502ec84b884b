/**
 * The plugin-job decider: what each thing that happens to one of the plugin's jobs means, as events of
 * the plugin's log. Its state is the job's statechart snapshot, `undefined` for a job never received, or
 * `FORGOTTEN` for one retention forgot whose deadline has not passed (the plugin's fold knows which). Pure:
 * time arrives on the command, and so does what the edge found out (a judged or run job's outcome, the
 * backend's answer to a POST). The plugin (adapters/plugin/jobs.ts) carries out what the outcome says.
 */
import type { JobResultBody } from '../../protocol/index.js';
import { inClear, jobError } from '../../protocol/job-errors.js';
import { nothing, type Decider, type Decision } from '../core/decider.js';
import type { PluginJobCloseReason, PluginJobEvent } from './plugin-job-events.js';
import { evolvePluginJob, initialPluginJob, pluginJobStage, type PluginJobSnapshot } from './plugin-job.js';

/** A job retention forgot: only its id is kept, until its deadline, so that it is never run twice. */
export const FORGOTTEN = 'forgotten';

export type PluginJobState = PluginJobSnapshot | typeof FORGOTTEN | undefined;

/** The backend's last word on a POST, retries done: an answer, or none before the job's deadline. */
export type BackendAnswer =
  { readonly kind: 'answered'; readonly status: number; readonly message?: string } | { readonly kind: 'gave_up' };

interface JobCommand {
  readonly job_id: string;
  readonly at: number;
}

export type PluginJobCommand =
  /** A job frame of the stream. */
  | (JobCommand & { readonly type: 'receive'; readonly job: Record<string, unknown>; readonly cursor?: string })
  /** The answer to the job's `running` POST. */
  | (JobCommand & { readonly type: 'ran'; readonly answer: BackendAnswer })
  /** An outcome to record: the reasoner's, or a failure found before or instead of a run. */
  | (JobCommand & { readonly type: 'finish'; readonly outcome: JobResultBody })
  /** The answer to the POST of the job's recorded outcome. */
  | (JobCommand & { readonly type: 'posted'; readonly answer: BackendAnswer });

export type PluginJobOutcome =
  /** New: run it. */
  | 'received'
  /** A refused job sent again: run it (unless it runs already). */
  | 'resent'
  /** A closed job sent again: the backend did not get (or lost) its outcome; post it again, never run it again. */
  | 'closed_resent'
  /** Forgotten, its deadline not passed: never a second run. */
  | 'forgotten'
  /** The reasoner may run. */
  | 'started'
  /** This plugin is refused: the job waits to be sent again. */
  | 'refused'
  /** An outcome to post. */
  | 'finished'
  | 'closed'
  /** Nothing to do: a job seen already, or a command its state does not take. */
  | 'unchanged';

type PluginJobDecision = Decision<PluginJobEvent, PluginJobOutcome>;

/** Why nothing more is owed, from the backend's answer. */
function reasonOf(answer: BackendAnswer): PluginJobCloseReason {
  if (answer.kind === 'gave_up') return 'gave_up';
  return answer.status === 200 ? 'posted' : answer.status === 409 ? 'settled' : 'rejected';
}

function closed(job_id: string, answer: BackendAnswer, at: number): PluginJobDecision {
  const status = answer.kind === 'answered' ? { status: answer.status } : {};
  return { events: [{ type: 'plugin.job_closed', job_id, reason: reasonOf(answer), ...status, at }], outcome: 'closed' };
}

/** Every outcome is recorded here, so every way a BYO job can fail is made safe to send in one place: its catalogue words only. */
function finished(job: PluginJobSnapshot, outcome: JobResultBody, at: number): PluginJobDecision {
  const recorded = job.context.job.byo === true && 'error' in outcome ? inClear(outcome.error) : outcome;
  return { events: [{ type: 'plugin.job_finished', job_id: job.context.job_id, outcome: recorded, at }], outcome: 'finished' };
}

function decide(command: PluginJobCommand, job: PluginJobState): PluginJobDecision {
  const { job_id, at } = command;
  if (command.type === 'receive') {
    if (job === undefined) {
      const cursor = command.cursor === undefined ? {} : { cursor: command.cursor };
      return { events: [{ type: 'plugin.job_received', job_id, job: command.job, ...cursor, at }], outcome: 'received' };
    }
    if (job === FORGOTTEN) return nothing('forgotten');
    const stage = pluginJobStage(job);
    if (stage === 'refused') return nothing('resent');
    return nothing(stage === 'closed' && job.context.outcome !== undefined ? 'closed_resent' : 'unchanged');
  }
  if (job === undefined || job === FORGOTTEN) return nothing('unchanged');
  const stage = pluginJobStage(job);
  switch (command.type) {
    case 'ran': {
      if (stage === 'finished' || stage === 'closed') return nothing('unchanged');
      const { answer } = command;
      if (answer.kind === 'gave_up')
        return finished(job, jobError('deadline_exceeded', 'the backend could not be told the job runs before its deadline'), at);
      if (answer.status === 200) return { events: [{ type: 'plugin.job_started', job_id, at }], outcome: 'started' };
      if (answer.status === 403) return { events: [{ type: 'plugin.job_refused', job_id, at }], outcome: 'refused' };
      return closed(job_id, answer, at);
    }
    case 'finish':
      return stage === 'closed' ? nothing('unchanged') : finished(job, command.outcome, at);
    case 'posted': {
      if (stage !== 'finished') return nothing('unchanged');
      const { answer } = command;
      // A result the backend finds invalid (422) or too large (413) is reported as a failure instead: the client learns now, not at the deadline.
      if (answer.kind === 'answered' && (answer.status === 422 || answer.status === 413) && 'result' in job.context.outcome!) {
        return finished(job, jobError('invalid_result', answer.message?.slice(0, 2_000)), at);
      }
      return closed(job_id, answer, at);
    }
  }
}

function evolve(state: PluginJobState, event: PluginJobEvent): PluginJobState {
  if (event.type === 'plugin.job_received') {
    if (state !== undefined && state !== FORGOTTEN) throw new Error(`event log: plugin job ${event.job_id} received twice`);
    return initialPluginJob(event);
  }
  if (state === undefined || state === FORGOTTEN)
    throw new Error(`event log: ${event.type} for ${event.job_id}, not a job the plugin holds`);
  return evolvePluginJob(state, event);
}

export const pluginJobDecider: Decider<PluginJobState, PluginJobCommand, PluginJobEvent, PluginJobOutcome> = {
  decide,
  evolve,
  initialState: undefined,
};

/** What a start owes a job its log left open: a run (it was cut off, or never began), or the POST of its outcome. */
export function owed(job: PluginJobSnapshot): 'run' | 'post' | undefined {
  const stage = pluginJobStage(job);
  return stage === 'finished' ? 'post' : stage === 'closed' ? undefined : 'run';
}
