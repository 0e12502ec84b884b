import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { StateMachine } from 'xstate';
import { STATECHARTS, statechartPages, statechartSvg } from '../../visualizations/statecharts.js';

const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const DOCS = root('docs/statecharts/');
const RUN = 'run `npm run diagrams` after changing a machine';

describe('docs/statecharts', () => {
  it('is what `npm run diagrams` generates from the machines now: a page and a picture each', async () => {
    const files = await statechartPages();
    expect(files.map((f) => f.file)).toContain('job.svg');
    expect(readdirSync(DOCS).sort(), RUN).toEqual(files.map((f) => f.file).sort());
    for (const { file, text } of files) expect(readFileSync(DOCS + file, 'utf8'), `docs/statecharts/${file}: ${RUN}`).toBe(text);
  });

  it('is the same to the byte however often and in whatever order it is generated', async () => {
    const backwards = [];
    for (const { name } of [...STATECHARTS].reverse()) backwards.push({ file: `${name}.svg`, text: await statechartSvg(name) });
    const pages = await statechartPages();
    expect(backwards.reverse()).toEqual(pages.filter((page) => page.file.endsWith('.svg')));
    expect(await statechartPages()).toEqual(pages);
  });

  it('each page shows its picture above its Mermaid diagram', async () => {
    const pages = await statechartPages();
    for (const { name, title } of STATECHARTS) {
      const page = pages.find((p) => p.file === `${name}.md`)!.text;
      expect(page.indexOf(`![${title}](${name}.svg)`), name).toBeGreaterThan(0);
      expect(page.indexOf(`![${title}](${name}.svg)`), name).toBeLessThan(page.indexOf('```mermaid'));
    }
  });

  it('has every machine of machines/', async () => {
    const machines: unknown[] = [];
    const files = readdirSync(root('machines'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    for (const file of files) {
      const path = root(`machines/${file}`);
      const module = (await import(path)) as Record<string, unknown>;
      machines.push(...Object.values(module).filter((value) => value instanceof StateMachine));
    }
    expect(machines.length).toBeGreaterThanOrEqual(10);
    expect(new Set(STATECHARTS.map((s) => s.machine))).toEqual(new Set(machines));
  });

  it('has no picture by a name that is no machine', async () => {
    await expect(statechartSvg('nonesuch')).rejects.toThrow('no statechart is called nonesuch');
  });
});

describe('docs/statecharts/README.md', () => {
  it("shows every machine's picture", async () => {
    const index = (await statechartPages()).find((page) => page.file === 'README.md')!.text;
    for (const { name, title } of STATECHARTS) expect(index).toContain(`![${title}](${name}.svg)`);
  });
});
