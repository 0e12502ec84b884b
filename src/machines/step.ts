/**
 * Pure stepping of a statechart, as `xstate`'s `transition()`/`initialTransition()`, but with one inert
 * actor scope per machine instead of a new actor and system per call (which cost ~30 µs a step and
 * dominated a turn). Actions are collected, never executed. Only for machines that spawn and invoke
 * nothing, which is every machine here.
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

export interface Stepper<M extends AnyStateMachine> {
  initial(input: InputFrom<M>): [SnapshotFrom<M>, ExecutableActionsFrom<M>[]];
  next(snapshot: SnapshotFrom<M>, event: EventFromLogic<M>): [SnapshotFrom<M>, ExecutableActionsFrom<M>[]];
}

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
  return {
    initial(input) {
      collected = [];
      return [machine.getInitialSnapshot(scope, input) as SnapshotFrom<M>, collected];
    },
    next(snapshot, event) {
      // A machine that reached a final state takes no more events (as a live actor would not).
      if ((snapshot as { status: string }).status !== 'active') return [snapshot, []];
      collected = [];
      return [machine.transition(snapshot, event, scope) as SnapshotFrom<M>, collected];
    },
  };
}
