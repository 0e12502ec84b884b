/**
 * What the inspector knows of a log: every session, task, callback delivery, job, integration, pairing and plugin job,
 * with its timeline and its current state, as the replay folds (engine/replay/) fold them for `replay`.
 * The log is read from outside (storage/log-reader.ts: read-only, lockless), so it may be a running
 * process's; each refresh folds only what was appended since the one before.
 *
 * An event the folds cannot take (a damaged row, a type of another kind of log) stops the model there for
 * good, and `fault` says why: the log is append-only, so reading it again would meet the same event.
 */
import { foldsOf } from '../../engine/replay/log.js';
import { ReplayError, stateText, timelines } from '../../engine/replay/timeline.js';
import type { Entity, EntityKind, EntityState, Entry, Fold, Moved, Step, Timeline } from '../../engine/replay/timeline.js';
import { shorter } from '../../engine/replay/words.js';
import type { Form } from '../../machines/chat/events.js';
import { CorruptEventError, LogReader, type LogView } from '../../storage/log-reader.js';

/** One entity as the inspector lists it. */
export interface EntitySummary extends EntityState {
  /** `entityKey`: what `/api/entities/:key` names it by. */
  readonly key: string;
  readonly kind: EntityKind;
  readonly id: string | number;
  readonly session_id?: string;
  /** A job's integration. */
  readonly integration_id?: string;
  readonly form?: Form;
  /** The statechart it runs (a name of STATECHARTS). */
  readonly machine: string;
  /** Events that moved it. */
  readonly events: number;
  /** When the last of them happened (epoch ms). */
  readonly last_at: number;
  /** Its state as `replay` prints it: the state, and what its value does not already say. */
  readonly state_text: string;
  /** Its first words (a task's user message, a job's purpose), to know it by; none for what has none. */
  readonly says?: string;
}

export interface EntityTimeline extends EntitySummary {
  readonly entries: ReadonlyArray<Entry & { readonly state_text: string }>;
}

/** A row of the list is one line: a person knows a task by its first words, not by all of them. */
const SAYS_WIDTH = 100;

/** Each kind's statechart is named as the kind is, but a Form B session is a conversation. */
export function machineOf(entity: Entity): string {
  return entity.kind === 'session' && entity.form === 'B' ? 'conversation' : entity.kind;
}

function summaryOf(key: string, { entity, entries, final }: Timeline): EntitySummary {
  const says = entries.find((entry) => entry.says !== undefined)?.says;
  return {
    key,
    kind: entity.kind,
    id: entity.id,
    ...(entity.session_id === undefined ? {} : { session_id: entity.session_id }),
    ...(entity.integration_id === undefined ? {} : { integration_id: entity.integration_id }),
    ...(entity.form === undefined ? {} : { form: entity.form }),
    machine: machineOf(entity),
    ...final,
    events: entries.length,
    last_at: entries.at(-1)!.at,
    state_text: stateText(final),
    ...(says === undefined ? {} : { says: shorter(says, SAYS_WIDTH) }),
  };
}

export interface InspectorModelOptions {
  /** What a throwing steps listener is reported to. Default: a process warning. */
  readonly onError?: (error: unknown) => void;
}

export class InspectorModel {
  private fold: Fold<unknown> | undefined;
  private logKind: LogView['kind'];
  /** The position of the last event folded. */
  private position = 0;
  private readonly all = new Map<string, Timeline>();
  private readonly listeners = new Set<(steps: readonly Step[]) => void>();
  private problem: string | undefined;
  private stuck = false;
  private closed = false;
  /** A refresh was asked for since the running read began. */
  private wanted = false;
  private draining: Promise<void> | undefined;

  private constructor(
    private readonly reader: LogReader,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Opens the log at `path` and folds it; throws as `LogReader.open` does for a file that is not a log. */
  static async open(path: string, options: InspectorModelOptions = {}): Promise<InspectorModel> {
    const model = new InspectorModel(
      LogReader.open(path),
      options.onError ?? ((error) => process.emitWarning(error instanceof Error ? error : String(error))),
    );
    await model.refresh();
    return model;
  }

  get path(): string {
    return this.reader.path;
  }

  /** Whose log it is, by its first event; `undefined` while it has none. */
  get kind(): LogView['kind'] {
    return this.logKind;
  }

  /** The position of the last event folded (0: none). */
  get end(): number {
    return this.position;
  }

  /** Why the model stopped short of the log's end, or why the last read failed. */
  get fault(): string | undefined {
    return this.problem;
  }

  /** Every entity, in the order each first moved. */
  entities(): EntitySummary[] {
    return [...this.all].map(([key, timeline]) => summaryOf(key, timeline));
  }

  /** Every entity and the state it is in now, in the order each first moved. */
  current(): Moved[] {
    return [...this.all.values()].map(({ entity, final }) => ({ entity, ...final }));
  }

  timeline(key: string): EntityTimeline | undefined {
    const timeline = this.all.get(key);
    if (timeline === undefined) return undefined;
    return { ...summaryOf(key, timeline), entries: timeline.entries.map((entry) => ({ ...entry, state_text: stateText(entry) })) };
  }

  /** Called with the steps of each refresh that folded any, in the log's order. */
  onSteps(listener: (steps: readonly Step[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Folds what the log has gained; resolves once everything committed before the call is folded. Calls
   * that come while a read runs share the next one, which waits a turn of the event loop: a commit's own
   * listener may ask, and the read must not run inside the commit.
   */
  refresh(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.wanted = true;
    this.draining ??= this.drain();
    return this.draining;
  }

  /** Lets the read under way end, then lets go of the log. */
  async close(): Promise<void> {
    this.closed = true;
    await this.draining;
    this.reader.close();
  }

  private async drain(): Promise<void> {
    try {
      while (this.wanted) {
        this.wanted = false;
        await new Promise((resolve) => setImmediate(resolve));
        if (this.closed) return;
        if (!this.stuck) await this.readNew();
      }
    } finally {
      this.draining = undefined;
    }
  }

  private async readNew(): Promise<void> {
    const steps: Step[] = [];
    try {
      await this.reader.read({ afterPosition: this.position }, (view) => {
        this.fold ??= this.foldOf(view);
        if (this.fold === undefined) return;
        for (const stored of view.events()) {
          steps.push(this.fold.step(stored));
          this.position = stored.position;
        }
      });
      if (!this.stuck) this.problem = undefined;
    } catch (error) {
      this.problem = error instanceof Error ? error.message : String(error);
      this.stuck = error instanceof ReplayError || error instanceof CorruptEventError;
    }
    if (steps.length > 0) this.absorb(steps);
  }

  /** The fold for the log's kind; none for a log with no events yet, or one the folds cannot read. */
  private foldOf(view: LogView): Fold<unknown> | undefined {
    this.logKind = view.kind;
    // As `replay` does: a host's log under the bounds of the last start it holds when it is first read.
    const folds = foldsOf(view);
    if (folds !== undefined) return folds.fold();
    if (view.kind !== undefined) {
      this.stuck = true;
      this.problem = `${this.path} begins with an event that no host's, backend's or plugin's log begins with`;
    }
    return undefined;
  }

  private absorb(steps: readonly Step[]): void {
    for (const [key, timeline] of timelines(steps)) {
      const known = this.all.get(key);
      if (known === undefined) {
        this.all.set(key, timeline);
      } else {
        for (const entry of timeline.entries) known.entries.push(entry);
        known.final = timeline.final;
      }
    }
    for (const listener of this.listeners) {
      try {
        listener(steps);
      } catch (error) {
        this.onError(error);
      }
    }
  }
}
