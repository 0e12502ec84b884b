/**
 * Pure stepping of a statechart, as `xstate`'s `transition()`/`initialTransition()`: actions are
 * collected, never executed. Only for machines that spawn and invoke nothing, which is every machine here.
 *
 * A step is taken from the machine's compiled transition table (machines/transition-table.ts) where it
 * has one, and by XState's interpreter otherwise, with one inert actor scope per machine instead of a new
 * actor and system per call (which cost ~30 µs a step). Likewise a start: once XState has made the first
 * initial snapshot, later ones are that snapshot with their own context, for a machine whose start does
 * nothing but compute its context.
 */
import {
  createActor,
  type ActorScope,
  type AnyStateMachine,
  type EventFromLogic,
  type ExecutableActionsFrom,
  type InputFrom,
  type SnapshotFrom,
} from 'xstate';
import { compileTransitions, noSpawn } from './transition-table.js';

export interface Stepper<M extends AnyStateMachine> {
  initial(input: InputFrom<M>): [SnapshotFrom<M>, ExecutableActionsFrom<M>[]];
  next(snapshot: SnapshotFrom<M>, event: EventFromLogic<M>): [SnapshotFrom<M>, ExecutableActionsFrom<M>[]];
}

type ContextFactory = (args: { spawn: unknown; input: unknown; self: unknown }) => object;

export function stepper<M extends AnyStateMachine>(machine: M): Stepper<M> {
  const self = createActor(machine);
  let collected: ExecutableActionsFrom<M>[] = [];
  const scope = {
    self,
    id: '',
    sessionId: '',
    system: self.system,
    logger: () => {},
    defer: () => {},
    emit: () => {},
    stopChild: () => {},
    actionExecutor: (action: ExecutableActionsFrom<M>) => {
      collected.push(action);
    },
  } as unknown as ActorScope<SnapshotFrom<M>, EventFromLogic<M>>;
  const table = compileTransitions(machine, { self, system: self.system });
  const contextOf = machine.config.context as ContextFactory | object | undefined;
  /** The first start's snapshot, once it is known that a start is its context and nothing else. */
  let started: SnapshotFrom<M> | undefined;

  const interpretInitial = (input: InputFrom<M>): [SnapshotFrom<M>, ExecutableActionsFrom<M>[]] => {
    collected = [];
    const snapshot = machine.getInitialSnapshot(scope, input) as SnapshotFrom<M>;
    if (
      table !== undefined &&
      typeof contextOf === 'function' &&
      collected.length === 0 &&
      (snapshot as { status: string }).status === 'active'
    )
      started = snapshot;
    return [snapshot, collected];
  };

  return {
    initial(input) {
      if (started === undefined) return interpretInitial(input);
      let context: object;
      try {
        // As XState assigns it: a copy of what the machine's context function returns.
        context = { ...(contextOf as ContextFactory)({ spawn: noSpawn, input, self }) };
      } catch {
        // XState makes that an errored snapshot.
        return interpretInitial(input);
      }
      return [{ ...(started as object), context, children: {}, historyValue: {} } as SnapshotFrom<M>, []];
    },
    next(snapshot, event) {
      // A machine that reached a final state takes no more events (as a live actor would not).
      if ((snapshot as { status: string }).status !== 'active') return [snapshot, []];
      const compiled = table?.next(snapshot, event);
      if (compiled !== undefined) return compiled as [SnapshotFrom<M>, ExecutableActionsFrom<M>[]];
      collected = [];
      return [machine.transition(snapshot, event, scope) as SnapshotFrom<M>, collected];
    },
  };
}
