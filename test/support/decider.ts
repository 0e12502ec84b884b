/**
 * Deciders tested as Emmett's `deciderSpecification` tests them: given(events) → when(command) →
 * then(events, outcome). The given events are folded with the decider's own `evolve` from its
 * `initialState`, so a test states the history in the log's own terms, never a hand-built state.
 */
import { expect } from 'vitest';
import { foldEvents, type Decider, type Decision } from '../../machines/core/decider.js';

export interface Then<Event, Outcome> {
  /** The decision's events, exactly, and (if given) its outcome. */
  then(events: readonly Event[], outcome?: Outcome): void;
  /** Nothing to log; the answer is `outcome`. */
  thenNothing(outcome: Outcome): void;
  /** The decision itself, for assertions of another shape. */
  readonly decision: Decision<Event, Outcome>;
}

export function deciderSpecification<State, Command, Event, Outcome, Decided extends Event>(
  decider: Decider<State, Command, Event, Outcome, Decided>,
) {
  return {
    given(events: readonly Event[]) {
      return {
        when(command: Command): Then<Decided, Outcome> {
          return thenOf(decider.decide(command, foldEvents(decider, events)));
        },
      };
    },
  };
}

/** The `then` half for a decision already made. */
export function thenOf<Event, Outcome>(decision: Decision<Event, Outcome>): Then<Event, Outcome> {
  return {
    decision,
    then(expected, outcome) {
      expect(decision.events).toStrictEqual(expected);
      if (outcome !== undefined) expect(decision.outcome).toBe(outcome);
    },
    thenNothing(outcome) {
      expect(decision).toStrictEqual({ events: [], outcome });
    },
  };
}
