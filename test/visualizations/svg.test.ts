/**
 * The statechart pictures as a browser reads them: Debian's headless Chromium parses each SVG with its XML
 * parser (a malformed picture is a `parsererror`), and the test compares what it finds with the machine.
 */
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setup, type AnyStateMachine, type AnyStateNode } from 'xstate';
import { toMermaid } from '../../visualizations/mermaid.js';
import { STATECHARTS } from '../../visualizations/statecharts.js';
import { toSvg } from '../../visualizations/svg.js';

const CHROMIUM = '/usr/bin/chromium';
let browser: Browser;
let page: Page;
beforeAll(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  page = await browser.newPage();
});
afterAll(() => browser?.close());

type Point = [number, number];
interface Rect {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/** What the parsed picture holds. */
interface Drawing {
  readonly error: string | undefined;
  readonly namespace: string | null;
  readonly title: string | undefined;
  readonly width: number;
  readonly height: number;
  readonly states: ReadonlyArray<{ path: string; classes: string; rects: Rect[]; name: string }>;
  readonly initials: ReadonlyArray<{ target: string; dot: Rect; points: Point[] }>;
  readonly transitions: ReadonlyArray<{ event: string | null; source: string; target: string; points: Point[]; label: string }>;
}

/** The little of the browser's DOM that read() uses (the project’s typings have no DOM: the sources must not use it). */
interface XmlElement {
  readonly localName: string;
  readonly namespaceURI: string | null;
  readonly textContent: string | null;
  readonly firstElementChild: XmlElement | null;
  getAttribute(name: string): string | null;
  querySelector(selector: string): XmlElement | null;
  querySelectorAll(selector: string): Iterable<XmlElement>;
}
declare const DOMParser: new () => { parseFromString(text: string, type: string): XmlElement & { readonly documentElement: XmlElement } };

async function read(svg: string): Promise<Drawing> {
  // No named functions in here: the function is sent to the page as its source text.
  return page.evaluate((text) => {
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    const root = doc.documentElement;
    const rect = (e: XmlElement) => ({
      x: +e.getAttribute('x')!,
      y: +e.getAttribute('y')!,
      width: +e.getAttribute('width')!,
      height: +e.getAttribute('height')!,
    });
    const points = (g: XmlElement) =>
      g
        .querySelector('polyline')!
        .getAttribute('points')!
        .split(' ')
        .map((p) => p.split(',').map(Number) as [number, number]);
    return {
      error: doc.querySelector('parsererror')?.textContent ?? undefined,
      namespace: root.namespaceURI,
      title: root.firstElementChild?.localName === 'title' ? root.firstElementChild.textContent! : undefined,
      width: +root.getAttribute('width')!,
      height: +root.getAttribute('height')!,
      states: [...root.querySelectorAll('g[data-state]')].map((g) => ({
        path: g.getAttribute('data-state')!,
        classes: g.getAttribute('class')!,
        rects: [...g.querySelectorAll('rect')].map(rect),
        name: g.querySelector('text')!.textContent!,
      })),
      initials: [...root.querySelectorAll('g.initial')].map((g) => {
        const circle = g.querySelector('circle')!;
        const [cx, cy, r] = ['cx', 'cy', 'r'].map((a) => +circle.getAttribute(a)!) as [number, number, number];
        return { target: g.getAttribute('data-target')!, dot: { x: cx - r, y: cy - r, width: 2 * r, height: 2 * r }, points: points(g) };
      }),
      transitions: [...root.querySelectorAll('g.transition')].map((g) => ({
        event: g.getAttribute('data-event'),
        source: g.getAttribute('data-source')!,
        target: g.getAttribute('data-target')!,
        points: points(g),
        label: g.querySelector('text')!.textContent!,
      })),
    };
  }, svg);
}

/** Every state below the root, read from the StateNode tree. */
function statesOf(node: AnyStateNode): AnyStateNode[] {
  return Object.values(node.states).flatMap((child) => [child, ...statesOf(child)]);
}

/**
 * How many arrows the machine has, counted from its StateNode tree: one per target of each transition (a
 * self-loop when it has none); the root's once for each top-level state that is not final.
 */
function arrowCount(machine: AnyStateMachine): number {
  const of = (node: AnyStateNode) =>
    [...[...node.transitions.values()].flat(), ...(node.always ?? [])].reduce((sum, t) => sum + (t.target?.length ?? 1), 0);
  const topLevel = Object.values(machine.root.states).filter((node) => node.type !== 'final').length;
  return statesOf(machine.root).reduce((sum, node) => sum + of(node), 0) + of(machine.root) * topLevel;
}

/** Whether `point` lies on the border of `box`, to the rounding of the coordinates. */
function onBorder([x, y]: Point, box: Rect): boolean {
  const near = (a: number, b: number) => Math.abs(a - b) <= 0.2;
  const withinX = x >= box.x - 0.2 && x <= box.x + box.width + 0.2;
  const withinY = y >= box.y - 0.2 && y <= box.y + box.height + 0.2;
  return (withinX && (near(y, box.y) || near(y, box.y + box.height))) || (withinY && (near(x, box.x) || near(x, box.x + box.width)));
}

describe('the statechart pictures', () => {
  for (const { name, title, machine } of STATECHARTS) {
    it(`${name}: well-formed SVG with one group per state and one arrow per transition, each arrow from its source's border to its target's`, async () => {
      const drawing = await read(await toSvg(machine, title));
      expect(drawing.error).toBeUndefined();
      expect(drawing.namespace).toBe('http://www.w3.org/2000/svg');
      expect(drawing.title).toBe(title);

      const paths = statesOf(machine.root).map((node) => node.path.join('.'));
      expect(drawing.states.map((s) => s.path)).toEqual(paths);

      const mermaidArrows = toMermaid(machine)
        .split('\n')
        .filter((line) => / --> /.test(line) && !line.includes('[*]'));
      expect(drawing.transitions).toHaveLength(arrowCount(machine));
      expect(drawing.transitions).toHaveLength(mermaidArrows.length);
      // The same arrows as the Mermaid diagram's, in Mermaid's ids (paths joined by `_`).
      const id = (path: string) => path.replaceAll('.', '_');
      expect(drawing.transitions.map((t) => `  ${id(t.source)} --> ${id(t.target)}: ${t.label}`)).toEqual(mermaidArrows);

      const box = new Map(drawing.states.map((s) => [s.path, s.rects[0]!]));
      for (const t of drawing.transitions) {
        expect(t.points.length, `${t.source} -> ${t.target}`).toBeGreaterThanOrEqual(2);
        expect(onBorder(t.points[0]!, box.get(t.source)!), `${t.event} leaves ${t.source} at its border`).toBe(true);
        expect(onBorder(t.points.at(-1)!, box.get(t.target)!), `${t.event} reaches ${t.target} at its border`).toBe(true);
      }
      for (const initial of drawing.initials) {
        expect(onBorder(initial.points[0]!, initial.dot), `the initial dot of ${initial.target}`).toBe(true);
        expect(onBorder(initial.points.at(-1)!, box.get(initial.target)!), `the initial arrow reaches ${initial.target}`).toBe(true);
      }
      // Every child lies inside its parent's box, and everything inside the picture.
      for (const node of statesOf(machine.root)) {
        const outer =
          node.parent === machine.root
            ? { x: 0, y: 0, width: drawing.width, height: drawing.height }
            : box.get(node.parent!.path.join('.'))!;
        const inner = box.get(node.path.join('.'))!;
        expect(inner.x >= outer.x && inner.y >= outer.y, node.id).toBe(true);
        expect(inner.x + inner.width <= outer.x + outer.width && inner.y + inner.height <= outer.y + outer.height, node.id).toBe(true);
      }
    });
  }

  it('draws kinds of state, initial dots, eventless and guarded arrows, the root’s arrows and awkward text as they are', async () => {
    const odd = 'say <hi> & "bye"';
    const tiny = setup({ guards: { ready: () => true } }).createMachine({
      id: 'tiny',
      initial: 'idle',
      on: { reset: '.idle' },
      states: {
        idle: { on: { start: { guard: 'ready', target: 'running' }, [odd]: {} } },
        running: {
          initial: 'working',
          states: {
            working: { on: { finish: 'checked' } },
            checked: { always: 'done' },
            done: { type: 'final' },
          },
        },
        gone: { type: 'final' },
      },
    });
    const drawing = await read(await toSvg(tiny, 'Tiny & <small>'));
    expect(drawing.error).toBeUndefined();
    expect(drawing.title).toBe('Tiny & <small>');
    expect(drawing.states.map(({ path, classes, rects, name }) => [path, classes, rects.length, name])).toEqual([
      ['idle', 'state atomic', 1, 'idle'],
      ['running', 'state compound', 1, 'running'],
      ['running.working', 'state atomic', 1, 'working'],
      ['running.checked', 'state atomic', 1, 'checked'],
      ['running.done', 'state final', 2, 'done'],
      ['gone', 'state final', 2, 'gone'],
    ]);
    expect(drawing.initials.map((i) => i.target)).toEqual(['idle', 'running.working']);
    expect(drawing.transitions.map(({ event, source, target, label }) => [event, source, target, label])).toEqual([
      ['start', 'idle', 'running', 'start [ready]'],
      [odd, 'idle', 'idle', odd],
      ['finish', 'running.working', 'running.checked', 'finish'],
      ['', 'running.checked', 'running.done', '(always)'],
      // The root's arrow, from each top-level state but the final one.
      ['reset', 'idle', 'idle', 'reset'],
      ['reset', 'running', 'idle', 'reset'],
    ]);
  });

  it('is refused for a kind of state it cannot draw', async () => {
    const split = setup({}).createMachine({
      id: 'split',
      initial: 'both',
      states: { both: { type: 'parallel', states: { a: {}, b: {} } } },
    });
    await expect(toSvg(split, 'split')).rejects.toThrow('state split.both: parallel states are not drawn');
  });
});
