/**
 * An assistant plugin's log replayed: the plugin's fold (engine/reasoning/plugin-log.ts) takes each event
 * as the plugin does when it starts, and each step says which job moved and to which state of the
 * plugin-job statechart; a closed job with why (`posted`, `settled`, `gave_up`, `rejected`).
 */
import { pluginWords } from './words.js';
import { dotPath } from '../../machines/core/state-value.js';
import type { PluginEvent } from '../../machines/reasoning/plugin-job-events.js';
import type { LogRecord, StoredEvent } from '../../storage/event-log.js';
import { evolvePlugin, initialPluginState, type PluginState } from '../reasoning/plugin-log.js';
import { TouchedEncoder } from './encoder.js';
import { foldStep, forgotten, type Entity, type Fold, type FoldScope, type FoldStart, type Moved, type Step } from './timeline.js';

/** Every event a plugin logs: the compiler checks the list against `PluginEvent`. */
const PLUGIN_EVENTS: Record<PluginEvent['type'], true> = {
  'plugin.job_received': true,
  'plugin.job_started': true,
  'plugin.job_refused': true,
  'plugin.job_finished': true,
  'plugin.job_closed': true,
  'plugin.jobs_forgotten': true,
};
const PLUGIN_EVENT_TYPES: ReadonlySet<string> = new Set(Object.keys(PLUGIN_EVENTS));

const jobOf = (id: string): Entity => ({ kind: 'plugin-job', id });

export class PluginFold implements Fold<PluginState> {
  private readonly plugin: PluginState;
  private readonly scope: FoldScope;
  private readonly encoder = new TouchedEncoder();
  /** The job the last event was about. */
  private job: string | undefined;

  constructor(start?: FoldStart<PluginState>) {
    this.plugin = start?.state ?? initialPluginState();
    this.scope = { log: 'plugin', types: PLUGIN_EVENT_TYPES, after: start?.position ?? 0 };
  }

  step(stored: StoredEvent<LogRecord>): Step {
    return foldStep<PluginEvent>(
      stored,
      this.scope,
      (event) => this.move(event),
      (event) => pluginWords(event, this.sealed(event)),
    );
  }

  private sealed(event: PluginEvent): boolean {
    return event.type !== 'plugin.jobs_forgotten' && this.plugin.jobs.get(event.job_id)?.context.job.byo === true;
  }

  touched(): string {
    const snapshot = this.job === undefined ? undefined : this.plugin.jobs.get(this.job);
    return snapshot === undefined ? '' : this.encoder.encode(snapshot);
  }

  state(): PluginState {
    return this.plugin;
  }

  private move(event: PluginEvent): Moved[] {
    evolvePlugin(this.plugin, event);
    if (event.type === 'plugin.jobs_forgotten') {
      this.job = undefined;
      return forgotten(event.job_ids, jobOf);
    }
    this.job = event.job_id;
    const { value, context } = this.plugin.jobs.get(event.job_id)!;
    return [{ entity: jobOf(event.job_id), state: dotPath(value), ...(context.reason === undefined ? {} : { status: context.reason }) }];
  }
}
