import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { layerViolations, readModuleGraph, sourceFiles, withModuleSection, type ModuleGraph } from '../../visualizations/modules.js';

const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const graph = readModuleGraph(root('.'));

describe('modules', () => {
  it('every import follows the layering rule (protocol ← machines ← engine ← adapters; storage ← engine)', () => {
    expect(graph.modules).toContain('engine/chat/engine');
    expect(graph.imports.length).toBeGreaterThan(50);
    expect(layerViolations(graph)).toEqual([]);
  });

  it('names a wrong-way import', () => {
    const wrong: ModuleGraph = { modules: ['machines/session', 'engine/engine'], imports: [['machines/session', 'engine/engine']] };
    expect(layerViolations(wrong)).toEqual(['machines/session -> engine/engine']);
  });

  it("names an import from one channel's folder into the other's, and a folder no rule names", () => {
    const wrong: ModuleGraph = {
      modules: [
        'engine/reasoning/engine',
        'engine/chat/view',
        'engine/core/clock',
        'adapters/client/form-a',
        'adapters/cli/flags',
        'adapters/shiny/new',
      ],
      imports: [
        ['engine/reasoning/engine', 'engine/chat/view'],
        ['engine/reasoning/engine', 'engine/core/clock'],
        ['adapters/client/form-a', 'adapters/cli/flags'],
        ['adapters/shiny/new', 'adapters/cli/flags'],
      ],
    };
    expect(layerViolations(wrong)).toEqual([
      'engine/reasoning/engine -> engine/chat/view',
      'adapters/client/form-a -> adapters/cli/flags',
      'adapters/shiny/new -> adapters/cli/flags',
    ]);
  });

  it('every module opens with a comment that says what it is', () => {
    expect(graph.modules.filter((module) => graph.purposes?.[module] === undefined)).toEqual([]);
  });

  it("docs/modules.md's list and pictures are the ones the sources give (run `npm run diagrams` after adding a module or moving an import)", () => {
    const text = readFileSync(root('docs/modules.md'), 'utf8');
    expect(text).toBe(withModuleSection(text, graph));
  });
});

describe('sizes a reader can take in', () => {
  const lines = (path: string) => readFileSync(path, 'utf8').split('\n').length - 1;

  it('no source file is over 300 lines (split it by idea)', () => {
    const over = sourceFiles(root('.')).filter((file) => lines(file) > 300);
    expect(over.map((file) => `${file.slice(root('.').length)}: ${lines(file)} lines`)).toEqual([]);
  });

  it('README.md is a front door of at most 200 lines, ARCHITECTURE.md at most 400 (reference pages go in docs/)', () => {
    expect(lines(root('README.md'))).toBeLessThanOrEqual(200);
    expect(lines(root('ARCHITECTURE.md'))).toBeLessThanOrEqual(400);
  });
});
