/**
 * A job's life in the assistant plugin (the plugin's side of PROTOCOL.md 6d): received from the stream,
 * run through the reasoner once the backend says it may (started), its outcome recorded (finished) and
 * posted until nothing more is owed (closed). A refusal of this plugin (403, 6e.7) leaves a job unrun and
 * open (refused) until the backend sends it again. Every state is durable: the statechart folds the
 * plugin's own log (plugin-job-events.ts), so a restart takes each job up where it stood; `pluginJobDecider`
 * decides the events.
 *
 * | State         | Event               | Next          | Note                                                       |
 * |---------------|---------------------|---------------|------------------------------------------------------------|
 * | open.received | plugin.job_started  | open.started  | the backend accepted the `running` POST: the reasoner runs |
 * | open.received | plugin.job_refused  | open.refused  | the backend refuses this plugin: it waits to be sent again |
 * | open.started  | plugin.job_started  | open.started  | cut off by a stop, taken up again: accepted again          |
 * | open.started  | plugin.job_refused  | open.refused  | taken up again, and this plugin is refused now             |
 * | open.refused  | plugin.job_started  | open.started  | sent again, and accepted                                   |
 * | open.refused  | plugin.job_refused  | open.refused  | sent again, and refused again                              |
 * | open.*        | plugin.job_finished | open.finished | an outcome to post (a later one replaces it)               |
 * | open.*        | plugin.job_closed   | closed        | nothing more is owed: posted, settled, gave up, rejected   |
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import type { JobResultBody } from '../../protocol/index.js';
import { stepper } from '../core/step.js';
import {
  deadlineOf,
  type PluginJobCloseReason,
  type PluginJobClosed,
  type PluginJobEvent,
  type PluginJobFinished,
  type PluginJobReceived,
} from './plugin-job-events.js';

export interface PluginJobContext {
  readonly job_id: string;
  /** The envelope as received. */
  readonly job: Record<string, unknown>;
  /** Epoch ms; the moment of receipt when the envelope had no readable deadline. */
  readonly deadline_at: number;
  /** The outcome to post, once finished. */
  readonly outcome: JobResultBody | undefined;
  readonly closed_at: number | undefined;
  readonly reason: PluginJobCloseReason | undefined;
}

function initialContext(received: PluginJobReceived): PluginJobContext {
  return {
    job_id: received.job_id,
    job: received.job,
    deadline_at: deadlineOf(received.job, received.at),
    outcome: undefined,
    closed_at: undefined,
    reason: undefined,
  };
}

const SCRATCH = initialContext({ type: 'plugin.job_received', job_id: '', job: {}, at: 0 });

export const pluginJobMachine = setup({
  types: {
    context: {} as PluginJobContext,
    input: {} as PluginJobReceived,
    events: {} as Exclude<PluginJobEvent, PluginJobReceived>,
  },
  actions: {
    finish: assign((_, event: PluginJobFinished) => ({ outcome: event.outcome })),
    close: assign((_, event: PluginJobClosed) => ({ closed_at: event.at, reason: event.reason })),
  },
}).createMachine({
  id: 'plugin-job',
  // `transition()` evaluates this with no input when it builds its scratch actor: keep it total and cheap.
  context: ({ input }) => (input === undefined ? SCRATCH : initialContext(input)),
  initial: 'open',
  states: {
    open: {
      initial: 'received',
      states: {
        received: { on: { 'plugin.job_started': 'started', 'plugin.job_refused': 'refused' } },
        started: { on: { 'plugin.job_started': 'started', 'plugin.job_refused': 'refused' } },
        refused: { on: { 'plugin.job_started': 'started', 'plugin.job_refused': 'refused' } },
        finished: {},
      },
      on: {
        'plugin.job_finished': { target: '.finished', actions: { type: 'finish', params: ({ event }) => event } },
        'plugin.job_closed': { target: 'closed', actions: { type: 'close', params: ({ event }) => event } },
      },
    },
    closed: { type: 'final' },
  },
});

export type PluginJobSnapshot = SnapshotFrom<typeof pluginJobMachine>;

export type PluginJobStage = 'received' | 'started' | 'refused' | 'finished' | 'closed';

const pluginJob = stepper(pluginJobMachine);

export function initialPluginJob(received: PluginJobReceived): PluginJobSnapshot {
  return pluginJob.initial(received)[0];
}

/** Folds one logged event into the job. */
export function evolvePluginJob(snapshot: PluginJobSnapshot, event: Exclude<PluginJobEvent, PluginJobReceived>): PluginJobSnapshot {
  return pluginJob.next(snapshot, event)[0];
}

/** `received`, `started`, `refused`, `finished` (open), or `closed`. */
export function pluginJobStage(snapshot: PluginJobSnapshot): PluginJobStage {
  return typeof snapshot.value === 'string' ? 'closed' : (snapshot.value.open as PluginJobStage);
}
