import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { layerViolations, readModuleGraph, withModuleSection, type ModuleGraph } from '../../src/visualizations/modules.js';

const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const graph = readModuleGraph(root('src'));

describe('modules', () => {
  it('every import follows the layering rule (protocol ← machines ← engine ← adapters; storage ← engine)', () => {
    expect(graph.modules).toContain('engine/engine');
    expect(graph.imports.length).toBeGreaterThan(50);
    expect(layerViolations(graph)).toEqual([]);
  });

  it('names a wrong-way import', () => {
    const wrong: ModuleGraph = { modules: ['machines/session', 'engine/engine'], imports: [['machines/session', 'engine/engine']] };
    expect(layerViolations(wrong)).toEqual(['machines/session -> engine/engine']);
  });

  it("ARCHITECTURE.md's module pictures are the ones the sources draw (run `npm run diagrams` after moving an import)", () => {
    const text = readFileSync(root('ARCHITECTURE.md'), 'utf8');
    expect(text).toBe(withModuleSection(text, graph));
  });
});
