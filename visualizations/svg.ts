/**
 * A statechart as an SVG picture: the machine, read as mermaid.ts reads it, becomes an ELK graph; ELK's
 * layered algorithm lays it out (a compound state is a node holding its children, and arrows are routed
 * across the levels); the laid-out graph is written as SVG text. Nothing is placed by hand.
 *
 * Deterministic, so that a test can compare a committed picture byte for byte: text is measured by a fixed
 * width per character (no font is read), ELK's layout has no randomness, and coordinates are rounded.
 *
 * Every state is a `<g class="state" data-state="open.delivered">` holding its own box only (a parent's
 * group does not hold its children's), and every arrow a `<g class="transition" data-event data-source
 * data-target>`, so that a page showing the picture inline can light the current state with CSS.
 */
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { layout, type ElkExtendedEdge, type ElkNode } from './elk.js';
import { arrowsOf, children, descendants, kindOf, labelOf, type Arrow } from './mermaid.js';

/** A monospace glyph is about 0.6em wide: text is measured with that, the same on every machine. */
const GLYPH = 0.6;
const STATE_FONT = 12;
const LABEL_FONT = 11;
/** Around an arrow's label. */
const LABEL_PADDING = 2;
const STATE_HEIGHT = 28;
/** Room each side of a state's name. */
const STATE_PADDING = 12;
/** Room above a compound state's children for its name. */
const TITLE_HEIGHT = 28;
const CORNER = 8;
/** Between a final state's two borders. */
const FINAL_INSET = 3;
const DOT = 10;
const MARGIN = 16;

const LAYOUT: Record<string, string> = {
  'elk.algorithm': 'layered',
  'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
  'elk.direction': 'DOWN',
  'elk.padding': padding(MARGIN, MARGIN),
  'elk.spacing.nodeNode': '32',
  'elk.layered.spacing.nodeNodeBetweenLayers': '40',
  'elk.spacing.edgeNode': '16',
  'elk.layered.spacing.edgeNodeBetweenLayers': '16',
  'elk.spacing.edgeEdge': '12',
  'elk.layered.spacing.edgeEdgeBetweenLayers': '12',
  'elk.spacing.edgeLabel': '4',
  'elk.spacing.nodeSelfLoop': '20',
  'elk.edgeLabels.placement': 'CENTER',
  // Document order breaks ties and cycles, so the initial state comes first and a retry loop points back up.
  'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
  'elk.layered.cycleBreaking.strategy': 'MODEL_ORDER',
};

/** A state's self-loops go round all four sides rather than pile up on one (ELK does that only with free ports). */
const SELF_LOOPS: Record<string, string> = {
  'elk.portConstraints': 'FREE',
  'elk.layered.edgeRouting.selfLoopDistribution': 'EQUALLY',
};

// `.current` is for a page that shows the picture inline and marks the state its actor is in.
const STYLE = `
.background { fill: #ffffff; }
text { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; fill: #1f2328; }
.state rect { fill: #ffffff; stroke: #1f2328; stroke-width: 1.5; }
.state.compound rect { fill: #f6f8fa; }
.state text { font-size: ${STATE_FONT}px; dominant-baseline: central; }
.state.compound text { font-weight: bold; }
.state.current rect { fill: #fff8c5; stroke: #9a6700; stroke-width: 2.5; }
.initial circle, .arrowhead { fill: #1f2328; }
.initial polyline, .transition polyline { fill: none; stroke: #57606a; stroke-width: 1.2; }
.transition text { font-size: ${LABEL_FONT}px; dominant-baseline: central; fill: #57606a; paint-order: stroke; stroke: #ffffff; stroke-width: 3px; }
`;

const ARROWHEAD =
  '<defs><marker id="arrowhead" viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" markerWidth="7" markerHeight="7" orient="auto-start-reverse">' +
  '<path class="arrowhead" d="M0,0L10,5L0,10z"/></marker></defs>';

interface Box {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/** The laid-out graph by id: every node's box in the picture's coordinates, every edge as ELK returned it. */
interface Layout {
  readonly boxes: ReadonlyMap<string, Box>;
  readonly edges: ReadonlyMap<string, ElkExtendedEdge>;
}

/** The machine's picture; `title` becomes its `<title>`. */
export async function toSvg(machine: AnyStateMachine, title: string): Promise<string> {
  const graph = await layout(toElk(machine));
  const boxes = new Map<string, Box>();
  place(graph, 0, 0, boxes);
  const laidOut: Layout = { boxes, edges: new Map((graph.edges ?? []).map((edge) => [edge.id, edge])) };
  const [width, height] = [n(graph.width!), n(graph.height!)];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<title>${escape(title)}</title>`,
    `<style>${STYLE}</style>`,
    ARROWHEAD,
    `<rect class="background" width="${width}" height="${height}"/>`,
    // What is written later lies on top: parents, then their children, then the arrows.
    ...descendants(machine.root).map((node) => state(node, boxes.get(stateId(node))!)),
    ...parentsOf(machine).flatMap((parent) => parent.initial.target.map((target) => initial(parent, target, laidOut))),
    ...arrowsOf(machine).map((arrow, index) => transition(arrow, laidOut.edges.get(arrowId(index))!, laidOut)),
    '</svg>',
    '',
  ].join('\n');
}

/** The ELK graph: every state a node inside its parent's, each parent's initial dot, every arrow an edge. */
function toElk(machine: AnyStateMachine): ElkNode {
  const initialArrows = parentsOf(machine).flatMap((parent) =>
    parent.initial.target.map((target) => ({ id: initialArrowId(parent), sources: [initialId(parent)], targets: [stateId(target)] })),
  );
  const arrows = arrowsOf(machine).map(({ source, target, transition }, index) => {
    const text = labelOf(transition);
    const label = { text, width: textWidth(text, LABEL_FONT) + 2 * LABEL_PADDING, height: LABEL_FONT + 2 * LABEL_PADDING };
    return { id: arrowId(index), sources: [stateId(source)], targets: [stateId(target)], labels: [label] };
  });
  // Edges are all given at the top; ELK names the node each one's coordinates are relative to (its container).
  return { id: 'root', layoutOptions: LAYOUT, children: nodesIn(machine.root), edges: [...initialArrows, ...arrows] };
}

/** The root and every compound state: the states that may hold an initial dot. */
function parentsOf(machine: AnyStateMachine): AnyStateNode[] {
  return [machine.root, ...descendants(machine.root).filter((node) => kindOf(node) === 'compound')];
}

/** The nodes directly inside `parent`: its initial dot, if it has an initial state, then its states. */
function nodesIn(parent: AnyStateNode): ElkNode[] {
  const dot = parent.initial.target.length > 0 ? [{ id: initialId(parent), width: DOT, height: DOT }] : [];
  return [...dot, ...children(parent).map(nodeOf)];
}

function nodeOf(node: AnyStateNode): ElkNode {
  const width = textWidth(node.key, STATE_FONT) + 2 * STATE_PADDING;
  if (kindOf(node) !== 'compound') return { id: stateId(node), width, height: STATE_HEIGHT, layoutOptions: SELF_LOOPS };
  const layoutOptions = {
    'elk.padding': padding(TITLE_HEIGHT + STATE_PADDING, 2 * STATE_PADDING),
    // Its name must fit however narrow its children are.
    'elk.nodeSize.constraints': 'MINIMUM_SIZE',
    'elk.nodeSize.minimum': `(${width}, ${TITLE_HEIGHT})`,
  };
  return { id: stateId(node), layoutOptions, children: nodesIn(node) };
}

/** Every node's box in the picture's coordinates (ELK gives each relative to its parent). */
function place(node: ElkNode, x: number, y: number, boxes: Map<string, Box>): void {
  boxes.set(node.id, { x, y, width: node.width!, height: node.height! });
  for (const child of node.children ?? []) place(child, x + child.x!, y + child.y!, boxes);
}

function state(node: AnyStateNode, box: Box): string {
  const kind = kindOf(node);
  const rect = (inset: number) =>
    `<rect x="${n(box.x + inset)}" y="${n(box.y + inset)}" width="${n(box.width - 2 * inset)}" height="${n(box.height - 2 * inset)}" rx="${n(CORNER - inset)}"/>`;
  const borders = kind === 'final' ? rect(0) + rect(FINAL_INSET) : rect(0);
  const name =
    kind === 'compound'
      ? `<text x="${n(box.x + STATE_PADDING)}" y="${n(box.y + TITLE_HEIGHT / 2)}">${escape(node.key)}</text>`
      : `<text x="${n(box.x + box.width / 2)}" y="${n(box.y + box.height / 2)}" text-anchor="middle">${escape(node.key)}</text>`;
  return `<g class="state ${kind}" data-state="${escape(pathOf(node))}">${borders}${name}</g>`;
}

/** A parent's initial dot and its arrow to the initial state. */
function initial(parent: AnyStateNode, target: AnyStateNode, laidOut: Layout): string {
  const dot = laidOut.boxes.get(initialId(parent))!;
  const circle = `<circle cx="${n(dot.x + DOT / 2)}" cy="${n(dot.y + DOT / 2)}" r="${n(DOT / 2)}"/>`;
  return `<g class="initial" data-target="${escape(pathOf(target))}">${circle}${polyline(laidOut.edges.get(initialArrowId(parent))!, laidOut)}</g>`;
}

/** An arrow as ELK routed it, its label where ELK put it. */
function transition({ source, target, transition }: Arrow, edge: ElkExtendedEdge, laidOut: Layout): string {
  const label = edge.labels![0]!;
  const at = containerOf(edge, laidOut);
  const text = `<text x="${n(at.x + label.x! + LABEL_PADDING)}" y="${n(at.y + label.y! + label.height! / 2)}">${escape(label.text!)}</text>`;
  const data = `data-event="${escape(transition.eventType)}" data-source="${escape(pathOf(source))}" data-target="${escape(pathOf(target))}"`;
  return `<g class="transition" ${data}>${polyline(edge, laidOut)}${text}</g>`;
}

function polyline(edge: ElkExtendedEdge, laidOut: Layout): string {
  const at = containerOf(edge, laidOut);
  const points = (edge.sections ?? []).flatMap((section) => [section.startPoint, ...(section.bendPoints ?? []), section.endPoint]);
  return `<polyline points="${points.map((p) => `${n(at.x + p.x)},${n(at.y + p.y)}`).join(' ')}" marker-end="url(#arrowhead)"/>`;
}

/** ELK gives an edge's points and labels relative to the node it names as the edge's container. */
function containerOf(edge: ElkExtendedEdge, laidOut: Layout): Box {
  return laidOut.boxes.get(edge.container!)!;
}

/** The state's path as xstate's state values spell it: `open.delivered`. */
function pathOf(node: AnyStateNode): string {
  return node.path.join('.');
}

function stateId(node: AnyStateNode): string {
  return `state:${pathOf(node)}`;
}

/** The id of a parent's initial dot. */
function initialId(parent: AnyStateNode): string {
  return `initial:${pathOf(parent)}`;
}

function initialArrowId(parent: AnyStateNode): string {
  return `initial-arrow:${pathOf(parent)}`;
}

function arrowId(index: number): string {
  return `arrow:${index}`;
}

function textWidth(text: string, fontSize: number): number {
  return Math.ceil(text.length * fontSize * GLYPH);
}

function padding(top: number, sides: number): string {
  return `[top=${top},left=${sides},bottom=${sides},right=${sides}]`;
}

/** A coordinate, to a tenth of a pixel: short, and the same from one run to the next. */
function n(value: number): string {
  return String(Math.round(value * 10) / 10);
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
