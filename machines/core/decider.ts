/**
 * The shape every decider here has, after Emmett's: `decide(command, state)` says what happened as events,
 * `evolve(state, event)` folds one event, and `initialState` is the state before any event. All three are
 * pure: time, ids and the epoch arrive on the command. The engine folds the events a decision returns
 * before it acts on them, so the next decision sees them.
 */
export interface Decision<Event, Outcome> {
  readonly events: readonly Event[];
  /** What the caller answers with once the events are committed. */
  readonly outcome: Outcome;
}

/** A decision that changes nothing: no events, just the outcome. */
export function nothing<Event, Outcome>(outcome: Outcome): Decision<Event, Outcome> {
  return { events: [], outcome };
}

/** `Decided`: the events `decide` emits, when the state also folds events other deciders emit. */
export interface Decider<State, Command, Event, Outcome, Decided extends Event = Event> {
  decide(command: Command, state: State): Decision<Decided, Outcome>;
  evolve(state: State, event: Event): State;
  readonly initialState: State;
}

/** Folds events from a state (the decider's initial one by default). */
export function foldEvents<State, Event>(
  decider: Pick<Decider<State, never, Event, unknown, never>, 'evolve' | 'initialState'>,
  events: Iterable<Event>,
  from: State = decider.initialState,
): State {
  let state = from;
  for (const event of events) state = decider.evolve(state, event);
  return state;
}

/**
 * A decider whose state is `undefined` until its opening event, then a statechart's snapshot: the shape
 * of both chat forms' deciders (a session begins at `session.opened`) and of the reasoning job's.
 */
export function openedBy<Snapshot, Command, Event extends { readonly type: string }, Opening extends Event, Outcome>(parts: {
  /** Names the lifecycle in the error a log that cannot be folded raises. */
  readonly name: string;
  /** Names the one the event is about (its session, its job), in that error. */
  readonly idOf: (event: Event) => string;
  readonly decide: (command: Command, state: Snapshot | undefined) => Decision<Event, Outcome>;
  readonly opens: (event: Event) => event is Opening;
  readonly open: (event: Opening) => Snapshot;
  readonly step: (snapshot: Snapshot, event: Exclude<Event, Opening>) => Snapshot;
}): Decider<Snapshot | undefined, Command, Event, Outcome> {
  return {
    decide: parts.decide,
    evolve(state, event) {
      if (parts.opens(event)) {
        if (state !== undefined) throw new Error(`event log: ${parts.name} ${parts.idOf(event)} opened twice`);
        return parts.open(event);
      }
      if (state === undefined) throw new Error(`event log: ${event.type} for ${parts.idOf(event)}, not an open ${parts.name}`);
      return parts.step(state, event as Exclude<Event, Opening>);
    },
    initialState: undefined,
  };
}
