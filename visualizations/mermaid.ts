/**
 * A statechart as a Mermaid `stateDiagram-v2`, read from the machine object alone (xstate's public
 * StateNode API), so that the pictures in docs/statecharts/ are derived from machines/ and cannot drift.
 * The reading itself (which states, which arrows, what an arrow says) is exported: svg.ts draws the same.
 *
 * Layout: the state tree first, every state declared inside its parent with its initial and final arrows;
 * then every transition, at the top level. Mermaid puts a state in whichever block first names it, so a
 * transition into another compound state may only be written once every state has been declared.
 */
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from 'xstate';

const INDENT = '  ';

/** One arrow of a picture: a transition from a state to one of its targets. */
export interface Arrow {
  readonly source: AnyStateNode;
  readonly target: AnyStateNode;
  readonly transition: AnyTransitionDefinition;
}

export function toMermaid(machine: AnyStateMachine): string {
  const lines = ['stateDiagram-v2', ...block(machine.root, 1, new Set())];
  for (const { source, target, transition } of arrowsOf(machine)) {
    lines.push(`${INDENT}${idOf(source)} --> ${idOf(target)}: ${labelOf(transition)}`);
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
    if (kindOf(child) === 'compound') {
      lines.push(`${pad}state ${alias}${id} {`, ...block(child, depth + 1, seen), `${pad}}`);
    } else {
      lines.push(pad + (alias === '' ? id : `state ${alias}${id}`));
    }
  }
  for (const child of children(node)) if (child.type === 'final') lines.push(`${pad}${idOf(child)} --> [*]`);
  return lines;
}

/** The kinds of state a picture draws; parallel and history states are refused rather than drawn wrong. */
export function kindOf(node: AnyStateNode): 'compound' | 'atomic' | 'final' {
  if (node.type === 'compound' || node.type === 'atomic' || node.type === 'final') return node.type;
  throw new Error(`state ${node.id}: ${node.type} states are not drawn`);
}

/**
 * Every arrow of the machine, in document order. The root's transitions come last: they apply in every
 * state, and no box is drawn for the root, so each top-level state that still takes events (not a final
 * one: the machine is done there) carries them.
 */
export function arrowsOf(machine: AnyStateMachine): Arrow[] {
  const root = machine.root;
  const arrows = descendants(root).flatMap((node) => transitionsOf(node).flatMap((transition) => arrowsFrom(node, transition)));
  for (const transition of transitionsOf(root)) {
    for (const node of children(root)) if (node.type !== 'final') arrows.push(...arrowsFrom(node, transition));
  }
  return arrows;
}

/** One arrow per target; a transition without a target (or back to its source) is a self-loop. */
function arrowsFrom(source: AnyStateNode, transition: AnyTransitionDefinition): Arrow[] {
  return (transition.target ?? [source]).map((target) => ({ source, target, transition }));
}

/** What an arrow says: its event (`(always)` for an eventless transition, as the machines' tables write it), then its guard. */
export function labelOf(transition: AnyTransitionDefinition): string {
  const event = transition.eventType === '' ? '(always)' : transition.eventType;
  return transition.guard === undefined ? event : `${event} [${guardName(transition.guard)}]`;
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

export function children(node: AnyStateNode): AnyStateNode[] {
  return Object.values(node.states);
}

/** Every state below `node`, parents before children, in document order. */
export function descendants(node: AnyStateNode): AnyStateNode[] {
  return children(node).flatMap((child) => [child, ...descendants(child)]);
}

function idOf(node: AnyStateNode): string {
  return node.path.map((key) => key.replace(/[^A-Za-z0-9_]/g, '_')).join('_');
}
