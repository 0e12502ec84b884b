/**
 * A statechart compiled into a transition table at start-up: for each resting state and event type, what
 * XState's `transition()` would do, worked out once from the machine's definition, so that a step is a
 * table lookup, its context assignments and one object spread instead of the interpreter's walk (exit
 * set, entry set, a snapshot clone per assignment). It cut the replay fold's cost per event by about half.
 *
 * It compiles only what it can give exactly: flat or nested states without parallel regions or history,
 * no entry, exit, invoke or delayed transitions, no wildcard event descriptors, no machine output. Guarded
 * choices are compiled when each guard is an inline or named function (its params plain or a function),
 * and eventless transitions when they only move on (no guard, no action, one target): a subscription's
 * open passes through `replaying`, its close chooses by whether its queue is empty. A step it cannot give
 * exactly (a higher-order guard such as `and`, a built-in action other than `assign`, an eventless
 * transition that is guarded or acts, a nested final state whose completion some state listens for, a
 * guard that throws) is left to XState: `next` answers `undefined`, and the machine's other steps still
 * come from the table.
 * The licence is test/machines/step-equivalence.test.ts: for every machine, at every state and for every
 * event it takes, the table and XState's own `transition()` give the same snapshot and the same actions.
 */
import type { AnyMachineSnapshot, AnyStateMachine, AnyStateNode, AnyTransitionDefinition, StateValue } from 'xstate';
import { allNodes, chain, isLeaf, movedSnapshot, restingLeaf, sameNodes, valueOf } from './configuration.js';

type Snapshot = AnyMachineSnapshot;
type AnyTransition = AnyTransitionDefinition;
type EventObject = { readonly type: string };

/** An action the step hands to the actor scope's executor (a custom action; `assign` only changes context). */
export interface CollectedAction {
  readonly type: string;
  readonly info: { context: unknown; event: EventObject; self: unknown; system: unknown };
  readonly params: unknown;
  readonly exec: unknown;
}

type Assignment = (args: Record<string, unknown>, params: unknown) => Record<string, unknown>;

/** One action of a transition, resolved against the machine's implementations once. */
type CompiledAction =
  | { readonly kind: 'assign'; readonly assignment: Assignment | Record<string, unknown>; readonly params: unknown }
  | { readonly kind: 'custom'; readonly type: string; readonly exec: unknown; readonly params: unknown };

/** The configuration a step rests in: its state nodes root first, and what a snapshot derives from them. */
interface Resting {
  readonly nodes: readonly AnyStateNode[];
  readonly value: StateValue;
  readonly tags: readonly string[];
  readonly done: boolean;
}

/** A guard resolved against the machine's implementations: whether its transition is enabled. */
type Check = (context: unknown, event: EventObject) => boolean;

interface Step {
  readonly kind: 'step';
  readonly actions: readonly CompiledAction[];
  readonly to: Resting | undefined;
}

type Plan =
  /** No transition is enabled: the snapshot stays as it is (the very object, as XState returns it). */
  | { readonly kind: 'none' }
  /** XState must step this one. */
  | { readonly kind: 'interpret' }
  | Step
  /** Guarded: the first candidate whose guard passes (innermost state first, then in document order), else none. */
  | { readonly kind: 'choose'; readonly choices: readonly { readonly check: Check | undefined; readonly step: Step }[] };

export interface TransitionTable {
  /** The step, or `undefined` when XState must take it. */
  next(snapshot: Snapshot, event: EventObject): [Snapshot, CollectedAction[]] | undefined;
}

/** What actions see of the actor that runs them (the stepper's inert one). */
export interface ActionScope {
  readonly self: unknown;
  readonly system: unknown;
}

const NONE: Plan = { kind: 'none' };
const INTERPRET: Plan = { kind: 'interpret' };

/** Whether the machine uses only what the table gives exactly; anything else is XState's to step. */
function compilable(machine: AnyStateMachine): boolean {
  if (machine.root.output !== undefined) return false;
  return allNodes(machine.root).every(
    (node) =>
      (node.type === 'atomic' || node.type === 'compound' || node.type === 'final') &&
      node.entry.length === 0 &&
      node.exit.length === 0 &&
      node.invoke.length === 0 &&
      (node.type !== 'compound' || node.initial.actions.length === 0) &&
      [...node.transitions.keys()].every((descriptor) => !descriptor.includes('*')),
  );
}

export function compileTransitions(machine: AnyStateMachine, { self, system }: ActionScope): TransitionTable | undefined {
  if (!compilable(machine)) return undefined;
  const implementations = machine.implementations.actions as Record<string, unknown>;
  const resting = new Map<AnyStateNode, Resting>();
  const restingAt = (leaf: AnyStateNode): Resting => {
    let found = resting.get(leaf);
    if (found === undefined) {
      const nodes = chain(leaf);
      // A final state directly under the root completes the machine; one deeper only raises its parent's done event.
      const done = leaf.type === 'final' && leaf.parent === machine.root;
      // XState sorts a completed machine's state nodes innermost first (to run their exit actions) and keeps that order.
      const ordered = done ? [...nodes].reverse() : nodes;
      found = { nodes: ordered, value: valueOf(nodes), tags: ordered.flatMap((node) => node.tags), done };
      resting.set(leaf, found);
    }
    return found;
  };

  /** The transitions some state of `nodes` (innermost first) has for `type`: XState takes the innermost state's. */
  const candidates = (nodes: readonly AnyStateNode[], type: string) => {
    for (let i = nodes.length - 1; i >= 0; i--) {
      const found = nodes[i]!.transitions.get(type);
      if (found !== undefined && found.length > 0) return found;
    }
    return undefined;
  };
  /** Every transition for `type`, innermost state first: where all of a state's are guarded off, XState tries its parent's. */
  const allCandidates = (nodes: readonly AnyStateNode[], type: string) => {
    const found: AnyTransition[] = [];
    for (let i = nodes.length - 1; i >= 0; i--) found.push(...(nodes[i]!.transitions.get(type) ?? []));
    return found;
  };

  const guards = machine.implementations.guards as Record<string, unknown>;
  /** A guard as XState evaluates it, for an inline or named one with plain params; `undefined` for a higher-order one. */
  const compileGuard = (guard: unknown): Check | undefined => {
    const inline = typeof guard === 'function';
    const named = typeof guard === 'string' ? guard : inline ? undefined : (guard as { type?: string }).type;
    const resolved = inline ? guard : guards[named!];
    if (typeof resolved !== 'function' || 'check' in resolved) return undefined;
    const params = inline || typeof guard === 'string' ? undefined : (guard as { params?: unknown }).params;
    const check = resolved as (args: { context: unknown; event: EventObject }, params: unknown) => boolean;
    return (context, event) => {
      const args = { context, event };
      return check(args, typeof params === 'function' ? (params as (a: typeof args) => unknown)(args) : params);
    };
  };

  const compileAction = (action: unknown): CompiledAction | undefined => {
    const inline = typeof action === 'function';
    const type = typeof action === 'string' ? action : inline ? undefined : (action as { type: string }).type;
    const implementation = (inline ? action : implementations[type!]) as
      { resolve?: unknown; type?: string; assignment?: unknown } | undefined;
    const params = inline || typeof action === 'string' ? undefined : (action as { params?: unknown }).params;
    if (implementation === undefined || typeof implementation.resolve !== 'function') {
      return { kind: 'custom', type: type ?? (action as { name?: string }).name ?? '(anonymous)', exec: implementation, params };
    }
    if (implementation.type !== 'xstate.assign') return undefined;
    return { kind: 'assign', assignment: implementation.assignment as Assignment | Record<string, unknown>, params };
  };

  /** Where entering `target` comes to rest, through eventless transitions that only move (no guard, no action, one target). */
  const settle = (target: AnyStateNode): Resting | undefined => {
    let to = restingAt(restingLeaf(target));
    for (let hops = 0; hops < 8; hops += 1) {
      const always = to.nodes.flatMap((node) => node.always ?? []);
      if (always.length === 0) {
        const rest = to.nodes[to.done ? 0 : to.nodes.length - 1]!;
        // A final state under a compound one raises that state's done event: whoever listens for it is XState's to step.
        if (rest.type === 'final' && !to.done && candidates(to.nodes, `xstate.done.state.${rest.parent!.id}`) !== undefined)
          return undefined;
        return to;
      }
      const [only] = always;
      if (always.length > 1 || only!.guard !== undefined || only!.actions.length > 0 || only!.target?.length !== 1) return undefined;
      to = restingAt(restingLeaf(only!.target[0] as AnyStateNode));
    }
    return undefined;
  };

  const compileStep = (transition: AnyTransition, from: readonly AnyStateNode[]): Step | undefined => {
    const actions: CompiledAction[] = [];
    for (const action of transition.actions) {
      const compiled = compileAction(action);
      if (compiled === undefined) return undefined;
      actions.push(compiled);
    }
    if ((transition.target?.length ?? 0) > 1) return undefined;
    const target = transition.target?.[0] as AnyStateNode | undefined;
    // After every step XState looks for an eventless transition in the whole configuration it rests in.
    if (target === undefined)
      return from.some((node) => (node.always?.length ?? 0) > 0) ? undefined : { kind: 'step', actions, to: undefined };
    const to = settle(target);
    return to === undefined ? undefined : { kind: 'step', actions, to };
  };

  const plan = (leaf: AnyStateNode, type: string): Plan => {
    const from = restingAt(leaf).nodes;
    const found = allCandidates(from, type);
    if (found.length === 0) return NONE;
    const choices: { check: Check | undefined; step: Step }[] = [];
    for (const transition of found) {
      const check = transition.guard === undefined ? undefined : compileGuard(transition.guard);
      const step = compileStep(transition, from);
      if ((transition.guard !== undefined && check === undefined) || step === undefined) return INTERPRET;
      choices.push({ check, step });
      // An unguarded candidate is always taken: those after it never are.
      if (check === undefined) break;
    }
    // One candidate taken whatever the context: a plain step.
    return choices.length === 1 && choices[0]!.check === undefined ? choices[0]!.step : { kind: 'choose', choices };
  };

  const plans = new Map<AnyStateNode, Map<string, Plan>>();
  const planFor = (leaf: AnyStateNode, type: string): Plan => {
    let byType = plans.get(leaf);
    if (byType === undefined) plans.set(leaf, (byType = new Map()));
    let found = byType.get(type);
    if (found === undefined) byType.set(type, (found = plan(leaf, type)));
    return found;
  };

  return {
    next(snapshot, event) {
      const nodes = snapshot._nodes as readonly AnyStateNode[];
      // The one atomic state (no parallel regions): last, as stepping and `resolveState` list them; looked for otherwise.
      const last = nodes[nodes.length - 1]!;
      const planned = planFor(isLeaf(last) ? last : nodes.find(isLeaf)!, event.type);
      if (planned.kind === 'none') return [snapshot, []];
      if (planned.kind === 'interpret') return undefined;
      let step: Step | undefined;
      if (planned.kind === 'step') step = planned;
      else {
        try {
          step = planned.choices.find(({ check }) => check === undefined || check(snapshot.context, event))?.step;
        } catch {
          // XState reports a throwing guard in its own words.
          return undefined;
        }
        if (step === undefined) return [snapshot, []];
      }
      const collected: CollectedAction[] = [];
      let context = snapshot.context as Record<string, unknown>;
      let assigned = false;
      for (const action of step.actions) {
        const params =
          typeof action.params === 'function' ? (action.params as (args: unknown) => unknown)({ context, event }) : action.params;
        if (action.kind === 'custom') {
          collected.push({ type: action.type, info: { context, event, self, system }, params, exec: action.exec });
          continue;
        }
        const args = { context, event, spawn: noSpawn, self, system };
        const { assignment } = action;
        let update: Record<string, unknown>;
        if (typeof assignment === 'function') update = assignment(args, params);
        else {
          update = {};
          for (const key of Object.keys(assignment)) {
            const each = assignment[key];
            update[key] = typeof each === 'function' ? (each as Assignment)(args, params) : each;
          }
        }
        // What XState's `Object.assign({}, context, update)` makes, at a seventh of its cost.
        context = { ...context, ...update };
        assigned = true;
      }
      const { to } = step;
      if (to === undefined || sameNodes(to.nodes, nodes)) {
        return [
          assigned ? movedSnapshot(snapshot, context, snapshot.status, snapshot._nodes, snapshot.value, snapshot.tags) : snapshot,
          collected,
        ];
      }
      return [movedSnapshot(snapshot, context, to.done ? 'done' : snapshot.status, to.nodes, to.value, new Set(to.tags)), collected];
    },
  };
}

/** What `spawn` is to an assignment or a context function run outside an actor: every machine here spawns nothing. */
export function noSpawn(): never {
  throw new Error('a stepped statechart spawns nothing');
}
