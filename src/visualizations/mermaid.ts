/**
 * A statechart as a Mermaid `stateDiagram-v2`, read from the machine object alone (xstate's public
 * StateNode API), so that the pictures in docs/statecharts/ are derived from src/machines/ and cannot drift.
 *
 * Layout: the state tree first, every state declared inside its parent with its initial and final arrows;
 * then every transition, at the top level. Mermaid puts a state in whichever block first names it, so a
 * transition into another compound state may only be written once every state has been declared.
 */
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from 'xstate';

const INDENT = '  ';

export function toMermaid(machine: AnyStateMachine): string {
  const root = machine.root;
  const lines = ['stateDiagram-v2', ...block(root, 1, new Set())];
  for (const node of descendants(root)) {
    for (const transition of transitionsOf(node)) lines.push(...edges(node, transition));
  }
  // The root's transitions apply in every state; Mermaid has no box for the root, so each top-level
  // state that still takes events (not a final one: the machine is done there) carries them.
  for (const transition of transitionsOf(root)) {
    for (const node of children(root)) if (node.type !== 'final') lines.push(...edges(node, transition));
  }
  return lines.join('\n') + '\n';
}

/** The body of a compound state: its initial arrow, its children's declarations, its final arrows. */
function block(node: AnyStateNode, depth: number, seen: Set<string>): string[] {
  const pad = INDENT.repeat(depth);
  const lines = node.initial.target.map((target) => `${pad}[*] --> ${idOf(target)}`);
  for (const child of children(node)) {
    const id = idOf(child);
    // Ids are paths flattened to Mermaid's identifier alphabet, so two paths could meet in one id.
    if (seen.has(id)) throw new Error(`state ${child.id}: its Mermaid id ${id} is already taken`);
    seen.add(id);
    // The key is the label; it needs spelling out only when the id is not the key itself.
    const alias = id === child.key ? '' : `"${child.key}" as `;
    if (child.type === 'compound') {
      lines.push(`${pad}state ${alias}${id} {`, ...block(child, depth + 1, seen), `${pad}}`);
    } else if (child.type === 'atomic' || child.type === 'final') {
      lines.push(pad + (alias === '' ? id : `state ${alias}${id}`));
    } else {
      throw new Error(`state ${child.id}: ${child.type} states are not drawn`);
    }
  }
  for (const child of children(node)) if (child.type === 'final') lines.push(`${pad}${idOf(child)} --> [*]`);
  return lines;
}

/** One line per target; a transition without a target (or back to its source) is a self-loop. */
function edges(from: AnyStateNode, transition: AnyTransitionDefinition): string[] {
  const event = transition.eventType === '' ? 'always' : transition.eventType;
  const guard = transition.guard === undefined ? '' : ` [${guardName(transition.guard)}]`;
  return (transition.target ?? [from]).map((target) => `${INDENT}${idOf(from)} --> ${idOf(target)}: ${event}${guard}`);
}

function guardName(guard: NonNullable<AnyTransitionDefinition['guard']>): string {
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') return 'inline';
  return guard.type;
}

/** Document order: events as written in `on` (then `after`, `always`), each event's transitions in the order they are tried. */
function transitionsOf(node: AnyStateNode): AnyTransitionDefinition[] {
  return [...[...node.transitions.values()].flat(), ...(node.always ?? [])];
}

function children(node: AnyStateNode): AnyStateNode[] {
  return Object.values(node.states);
}

/** Every state below `node`, parents before children, in document order. */
function descendants(node: AnyStateNode): AnyStateNode[] {
  return children(node).flatMap((child) => [child, ...descendants(child)]);
}

function idOf(node: AnyStateNode): string {
  return node.path.map((key) => key.replace(/[^A-Za-z0-9_]/g, '_')).join('_');
}
