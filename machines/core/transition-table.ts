/**
 * A statechart compiled into a transition table at start-up: for each resting state and event type, what
 * XState's `transition()` would do, worked out once from the machine's definition, so that a step is a
 * table lookup, its context assignments and one object spread instead of the interpreter's walk (exit
 * set, entry set, a snapshot clone per assignment). It cut the replay fold's cost per event by about half.
 *
 * It compiles only what it can give exactly: flat or nested states without parallel regions or history,
 * no entry, exit, invoke or delayed transitions, no wildcard event descriptors, no machine output. A step
 * it cannot give exactly (a guarded choice, a built-in action other than `assign`, one that comes to rest
 * where an eventless transition may fire, a nested final state whose completion some state listens for)
 * is left to XState: `next` answers `undefined`. So a machine with a guard or a transient state still has
 * its other steps from the table (the stream reader's `frames` while it keeps up, the hot one).
 * The licence is test/machines/step-equivalence.test.ts: for every machine, at every state and for every
 * event it takes, the table and XState's own `transition()` give the same snapshot and the same actions.
 */
import type { AnyMachineSnapshot, AnyStateMachine, AnyStateNode, StateValue } from 'xstate';

type Snapshot = AnyMachineSnapshot;
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

type Plan =
  /** No transition is enabled: the snapshot stays as it is (the very object, as XState returns it). */
  | { readonly kind: 'none' }
  /** XState must step this one. */
  | { readonly kind: 'interpret' }
  | { readonly kind: 'step'; readonly actions: readonly CompiledAction[]; readonly to: Resting | undefined };

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

function allNodes(node: AnyStateNode): AnyStateNode[] {
  return [node, ...Object.values(node.states as Record<string, AnyStateNode>).flatMap(allNodes)];
}

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

const isLeaf = (node: AnyStateNode) => node.type === 'atomic' || node.type === 'final';

/** The state nodes from the root down to `node`. */
function chain(node: AnyStateNode): AnyStateNode[] {
  const nodes: AnyStateNode[] = [];
  for (let at: AnyStateNode | undefined = node; at !== undefined; at = at.parent) nodes.unshift(at);
  return nodes;
}

/** Where entering `node` comes to rest: a compound state enters its initial child, down to an atomic or final one. */
function restingLeaf(node: AnyStateNode): AnyStateNode {
  let at = node;
  while (at.type === 'compound') at = at.initial.target[0] as AnyStateNode;
  return at;
}

/** `'open'`, or `{ open: 'created' }`: the value XState gives a configuration without parallel regions. */
function valueOf(nodes: readonly AnyStateNode[]): StateValue {
  const keys = nodes.slice(1).map((node) => node.key);
  return keys.slice(0, -1).reduceRight<StateValue>((inner, key) => ({ [key]: inner }), keys[keys.length - 1]!);
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

  const plan = (leaf: AnyStateNode, type: string): Plan => {
    const from = restingAt(leaf).nodes;
    const found = candidates(from, type);
    if (found === undefined) return NONE;
    const [transition] = found;
    if (found.length > 1 || transition!.guard !== undefined) return INTERPRET;
    const actions: CompiledAction[] = [];
    for (const action of transition!.actions) {
      const compiled = compileAction(action);
      if (compiled === undefined) return INTERPRET;
      actions.push(compiled);
    }
    if ((transition!.target?.length ?? 0) > 1) return INTERPRET;
    const target = transition!.target?.[0] as AnyStateNode | undefined;
    // After every step XState looks for an eventless transition in the whole configuration it rests in.
    const eventless = (nodes: readonly AnyStateNode[]) => nodes.some((node) => (node.always?.length ?? 0) > 0);
    if (target === undefined) return eventless(from) ? INTERPRET : { kind: 'step', actions, to: undefined };
    const rest = restingLeaf(target);
    const to = restingAt(rest);
    if (eventless(to.nodes)) return INTERPRET;
    // A final state under a compound one raises that state's done event: whoever listens for it is XState's to step.
    if (rest.type === 'final' && !to.done && candidates(to.nodes, `xstate.done.state.${rest.parent!.id}`) !== undefined) return INTERPRET;
    return { kind: 'step', actions, to };
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
      const step = planFor(isLeaf(last) ? last : nodes.find(isLeaf)!, event.type);
      if (step.kind === 'none') return [snapshot, []];
      if (step.kind === 'interpret') return undefined;
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
        return [assigned ? moved(snapshot, context, snapshot.status, snapshot._nodes, snapshot.value, snapshot.tags) : snapshot, collected];
      }
      return [moved(snapshot, context, to.done ? 'done' : snapshot.status, to.nodes, to.value, new Set(to.tags)), collected];
    },
  };
}

/**
 * The next snapshot: what XState's `createMachineSnapshot` makes, field by field (a spread of the previous
 * one costs several times more where many machines' snapshots pass). The equivalence test checks the fields.
 */
function moved(
  from: Snapshot,
  context: unknown,
  status: string,
  nodes: readonly AnyStateNode[],
  value: StateValue,
  tags: ReadonlySet<string>,
): Snapshot {
  return {
    status,
    output: undefined,
    error: from.error,
    machine: from.machine,
    context,
    _nodes: nodes,
    value,
    tags,
    children: from.children,
    historyValue: from.historyValue,
    matches: from.matches,
    hasTag: from.hasTag,
    can: from.can,
    getMeta: from.getMeta,
    toJSON: from.toJSON,
  } as unknown as Snapshot;
}

/** The same state nodes, in any order (as XState compares configurations). */
function sameNodes(a: readonly AnyStateNode[], b: readonly AnyStateNode[]): boolean {
  return a.length === b.length && a.every((node) => b.includes(node));
}

/** What `spawn` is to an assignment or a context function run outside an actor: every machine here spawns nothing. */
export function noSpawn(): never {
  throw new Error('a stepped statechart spawns nothing');
}
