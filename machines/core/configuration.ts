/**
 * A statechart's state nodes as XState arranges them, for the transition table (transition-table.ts): the
 * configuration a step comes to rest in, its state value, and the snapshot XState would make of it.
 */
import type { AnyMachineSnapshot, AnyStateNode, StateValue } from 'xstate';

export function allNodes(node: AnyStateNode): AnyStateNode[] {
  return [node, ...Object.values(node.states as Record<string, AnyStateNode>).flatMap(allNodes)];
}

export const isLeaf = (node: AnyStateNode) => node.type === 'atomic' || node.type === 'final';

/** The state nodes from the root down to `node`. */
export function chain(node: AnyStateNode): AnyStateNode[] {
  const nodes: AnyStateNode[] = [];
  for (let at: AnyStateNode | undefined = node; at !== undefined; at = at.parent) nodes.unshift(at);
  return nodes;
}

/** Where entering `node` comes to rest: a compound state enters its initial child, down to an atomic or final one. */
export function restingLeaf(node: AnyStateNode): AnyStateNode {
  let at = node;
  while (at.type === 'compound') at = at.initial.target[0] as AnyStateNode;
  return at;
}

/** `'open'`, or `{ open: 'created' }`: the value XState gives a configuration without parallel regions. */
export function valueOf(nodes: readonly AnyStateNode[]): StateValue {
  const keys = nodes.slice(1).map((node) => node.key);
  return keys.slice(0, -1).reduceRight<StateValue>((inner, key) => ({ [key]: inner }), keys[keys.length - 1]!);
}

/**
 * The next snapshot: what XState's `createMachineSnapshot` makes, field by field (a spread of the previous
 * one costs several times more where many machines' snapshots pass). The equivalence test checks the fields.
 */
export function movedSnapshot(
  from: AnyMachineSnapshot,
  context: unknown,
  status: string,
  nodes: readonly AnyStateNode[],
  value: StateValue,
  tags: ReadonlySet<string>,
): AnyMachineSnapshot {
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
  } as unknown as AnyMachineSnapshot;
}

/** The same state nodes, in any order (as XState compares configurations). */
export function sameNodes(a: readonly AnyStateNode[], b: readonly AnyStateNode[]): boolean {
  return a.length === b.length && a.every((node) => b.includes(node));
}
