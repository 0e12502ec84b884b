/**
 * What a replay says of a log, whatever its kind: after each event, the entities it moved and the state
 * each moved to; per entity, its timeline and its final state. A state is the statechart's state value
 * as a dot path (`open.delivered`, `open.running`), with what the value alone does not say.
 */
import type { Form } from '../../machines/chat/events.js';
import type { LogRecord, StoredEvent } from '../../storage/event-log.js';

/** `plugin-job`: a job as an assistant plugin's log tells it. */
export type EntityKind = 'session' | 'task' | 'delivery' | 'job' | 'integration' | 'pairing' | 'plugin-job';

export interface Entity {
  readonly kind: EntityKind;
  /** A delivery's number counts its session's callback deliveries from 1. */
  readonly id: string | number;
  /** The session of a task or a callback delivery. */
  readonly session_id?: string;
  /** The integration of a job: its `job_id` is unique within it only. */
  readonly integration_id?: string;
  readonly form?: Form;
}

export interface EntityState {
  /** The state value as a dot path. */
  readonly state: string;
  /** A settled task's reply status, a job's state (`jobState`), why a session ended or a plugin's job closed. */
  readonly status?: string;
  /** Why the host settled a task in its agent's place (`interrupted`, `session_ended`, …). */
  readonly cause?: string;
}

export interface Moved extends EntityState {
  readonly entity: Entity;
}

/** One event, folded. */
export interface Step {
  readonly position: number;
  readonly at: number;
  readonly type: string;
  readonly moved: readonly Moved[];
  /** Its words (words.ts): what the user said, the reply, a job's purpose, result or error. */
  readonly says?: string;
}

export interface Entry extends EntityState {
  readonly position: number;
  readonly at: number;
  readonly type: string;
  readonly says?: string;
}

export interface Timeline {
  readonly entity: Entity;
  readonly entries: Entry[];
  final: EntityState;
}

/** Where a fold starts when not from nothing: a stored snapshot's state (`projection.state()`) and its position. */
export interface FoldStart<S> {
  readonly state: S;
  readonly position: number;
}

/** A log's fold, one event at a time. */
export interface Fold<S> {
  /** Folds the next event and says what it moved; an event that cannot be folded is a `ReplayError`. */
  step(stored: StoredEvent<LogRecord>): Step;
  /** The encoded state (state-codec.ts) of what the last step touched: what two folds compare after each event. */
  touched(): string;
  /** The projection's whole state, as a snapshot stores it. */
  state(): S;
}

/** An event a fold cannot take, named by its position. */
export class ReplayError extends Error {
  override readonly name = 'ReplayError';

  constructor(
    readonly position: number,
    readonly type: string,
    why: string,
  ) {
    super(`event #${position} (${type}) ${why}`);
  }
}

/** What a fold knows of the log it folds: its kind, its event types and where it started. */
export interface FoldScope {
  readonly log: string;
  readonly types: ReadonlySet<string>;
  readonly after: number;
}

/**
 * Folds one event with `move`, and reads its words with `says` once it is folded; refuses one of another log, one at or
 * before the start, and any that `move` cannot take.
 */
export function foldStep<E extends LogRecord>(
  stored: StoredEvent<LogRecord>,
  scope: FoldScope,
  move: (event: E) => readonly Moved[],
  says: (event: E) => string | undefined,
): Step {
  const { position, event } = stored;
  if (!scope.types.has(event.type)) throw new ReplayError(position, event.type, `is not an event of a ${scope.log} log`);
  if (position <= scope.after) throw new ReplayError(position, event.type, `comes before the fold's start, #${scope.after}`);
  try {
    const moved = move(event as E);
    const words = says(event as E);
    return { position, at: event.at, type: event.type, moved, ...(words === undefined ? {} : { says: words }) };
  } catch (error) {
    throw new ReplayError(position, event.type, `cannot be folded: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Retention lets go of what ended long ago as if it never was: `forgotten` is the last state of each of `ids`. */
export function forgotten(ids: readonly string[], entityOf: (id: string) => Entity): Moved[] {
  return ids.map((id) => ({ entity: entityOf(id), state: 'forgotten' }));
}

/** `settled (errored, interrupted)`: the state, and what its value does not say already (`completed`, never `completed (completed)`). */
export function stateText({ state, status, cause }: EntityState): string {
  const more = [status === undefined || state === status || state.endsWith(`.${status}`) ? undefined : status, cause].filter(
    (part) => part !== undefined,
  );
  return more.length === 0 ? state : `${state} (${more.join(', ')})`;
}

export function entityKey(entity: Entity): string {
  return `${entity.kind}:${entity.session_id ?? entity.integration_id ?? ''}:${entity.id}`;
}

/** Each entity's timeline and final state, in the order the entities first moved. */
export function timelines(steps: Iterable<Step>): Map<string, Timeline> {
  const all = new Map<string, Timeline>();
  for (const { position, at, type, moved, says } of steps) {
    for (const { entity, ...state } of moved) {
      const key = entityKey(entity);
      const timeline = all.get(key) ?? { entity, entries: [], final: state };
      timeline.entries.push({ position, at, type, ...(says === undefined ? {} : { says }), ...state });
      timeline.final = state;
      all.set(key, timeline);
    }
  }
  return all;
}
