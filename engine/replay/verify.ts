/**
 * `replay --verify`: the log folded twice, by two fresh folds in lockstep, each given its own copy of every
 * event, and compared after every event (the states the step moved each entity to, and the encoded state
 * of what it touched), then by their whole states at the end. A fold that depends on anything but the log
 * (a clock, randomness, state two folds share, an event it changes) parts from the other, and the first
 * event where it does is named. Where the process stored a snapshot, the fold's whole state at its
 * position is checked against it too.
 */
import isEqual from 'fast-deep-equal';
import type { SessionLimits } from '../../machines/chat/task-session.js';
import type { LogRecord, StoredEvent, StoredSnapshot } from '../../storage/event-log.js';
import { encodeState, type Encoded } from '../core/state-codec.js';
import { entityKey, type Fold, type Step } from './timeline.js';

/** A snapshot the process stored, checked when the fold reaches its position. */
export interface SnapshotCheck {
  readonly position: number;
  /** What differs between the snapshot and the fold's encoded state there; `undefined` when nothing does. */
  differs(folded: Encoded): string | undefined;
}

/** The first event after which the folds (or a fold and a snapshot) differ. */
export interface Difference {
  readonly position: number;
  readonly type: string;
  readonly what: string;
}

export interface Verification {
  readonly events: number;
  readonly difference?: Difference;
}

/**
 * The check of a stored snapshot: one the log says is damaged differs outright; one a host took under other
 * session limits than the fold's is not compared (the fold is right for the limits it folds under); any
 * other is compared whole, and the first place they differ named.
 */
export function snapshotCheck(stored: StoredSnapshot, limits?: SessionLimits): SnapshotCheck {
  return {
    position: stored.position,
    differs(folded) {
      if (stored.problem !== undefined) return stored.problem;
      let snapshot: { state?: Encoded; limits?: unknown };
      try {
        snapshot = JSON.parse(stored.data) as typeof snapshot;
      } catch {
        return 'it is not JSON';
      }
      if (limits !== undefined && !isEqual(snapshot.limits, limits)) return undefined;
      return snapshot.state === undefined ? 'it holds no state' : firstDifference(snapshot.state, folded, '');
    },
  };
}

/** Where two encoded states first differ, as a path (`sessions › s1 › context › backlog`), or undefined. */
function firstDifference(stored: Encoded, folded: Encoded, path: string): string | undefined {
  if (JSON.stringify(stored) === JSON.stringify(folded)) return undefined;
  const at = (key: string) => (path === '' ? key : `${path} › ${key}`);
  if (stored !== null && folded !== null && typeof stored === 'object' && typeof folded === 'object') {
    // A Map's entries by key: the entity that differs is what a person wants named.
    if (!Array.isArray(stored) && !Array.isArray(folded) && '$map' in stored && '$map' in folded) {
      const theirs = new Map((folded.$map as Encoded[][]).map(([key, value]) => [JSON.stringify(key), value!]));
      for (const [key, value] of stored.$map as Encoded[][]) {
        const name = at(String(key));
        if (!theirs.has(JSON.stringify(key))) return `${name}: only in the snapshot`;
        const inner = firstDifference(value!, theirs.get(JSON.stringify(key))!, name);
        if (inner !== undefined) return inner;
        theirs.delete(JSON.stringify(key));
      }
      const [extra] = theirs.keys();
      return extra === undefined ? `${path}: in another order` : `${at(JSON.parse(extra) as string)}: only in the fold`;
    }
    if (!Array.isArray(stored) && !Array.isArray(folded)) {
      for (const key of new Set([...Object.keys(stored), ...Object.keys(folded)])) {
        const inner = firstDifference(stored[key] ?? null, folded[key] ?? null, at(key));
        if (inner !== undefined) return inner;
      }
    }
  }
  return `${path === '' ? 'the state' : path}: ${JSON.stringify(stored).slice(0, 80)} in the snapshot, ${JSON.stringify(folded).slice(0, 80)} in the fold`;
}

function encodedState<S>(fold: Fold<S>): string {
  return JSON.stringify(encodeState(fold.state()));
}

function named(step: Step): string {
  return step.moved.length === 0 ? 'the host-wide state' : step.moved.map(({ entity }) => entityKey(entity)).join(', ');
}

/** Folds `events` twice and compares; snapshots come in position order. */
export function verify<S>(
  newFold: () => Fold<S>,
  events: Iterable<StoredEvent<LogRecord>>,
  snapshots: Iterable<SnapshotCheck> = [],
): Verification {
  const one = newFold();
  const two = newFold();
  const stored = snapshots[Symbol.iterator]();
  let snapshot = stored.next();
  let count = 0;
  let last: Step | undefined;
  for (const { position, event } of events) {
    const step = one.step({ position, event });
    const again = two.step({ position, event: structuredClone(event) });
    count += 1;
    last = step;
    const parted = (what: string): Verification => ({ events: count, difference: { position, type: step.type, what } });
    if (JSON.stringify(step) !== JSON.stringify(again)) {
      const moved = JSON.stringify(step.moved) !== JSON.stringify(again.moved);
      return parted(moved ? `the two folds moved ${named(step)} to different states` : 'the two folds read different words in it');
    }
    if (one.touched() !== two.touched()) return parted(`the two folds hold different states of ${named(step)}`);
    for (; !snapshot.done && snapshot.value.position <= position; snapshot = stored.next()) {
      if (snapshot.value.position < position) continue;
      const what = snapshot.value.differs(encodeState(one.state()));
      if (what !== undefined) return parted(`the snapshot stored at #${position} differs from the fold: ${what}`);
    }
  }
  if (last !== undefined && encodedState(one) !== encodedState(two)) {
    return { events: count, difference: { position: last.position, type: last.type, what: 'the two folds end in different states' } };
  }
  return { events: count };
}
