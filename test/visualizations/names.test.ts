/**
 * One concept, one name: no two source modules export different things under one name. A barrel's
 * re-export (index.ts, client.ts, protocol/index.ts) is the same symbol, so aliases are resolved through
 * the TypeScript checker and only distinct declarations count.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { sourceFiles } from '../../visualizations/modules.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Each exported name declared by more than one symbol, with the modules that declare them: `Name: a/b, c/d`. */
function sharedNames(base: string, files: readonly string[]): string[] {
  // Our modules only (no library's types): an alias needs its target's declaration, not its type.
  const options = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    noEmit: true,
    noResolve: true,
    types: [],
  };
  const program = ts.createProgram([...files], options);
  const checker = program.getTypeChecker();
  const owners = new Map<string, Map<ts.Symbol, string>>();
  for (const file of files) {
    const source = program.getSourceFile(file);
    const module = source === undefined ? undefined : checker.getSymbolAtLocation(source);
    if (module === undefined) continue;
    for (const exported of checker.getExportsOfModule(module)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const declaration = symbol.declarations?.[0];
      if (declaration === undefined) continue;
      const where = relative(base, declaration.getSourceFile().fileName).replace(/\.ts$/, '');
      const byName = owners.get(exported.name) ?? new Map<ts.Symbol, string>();
      byName.set(symbol, where);
      owners.set(exported.name, byName);
    }
  }
  return [...owners]
    .filter(([, symbols]) => symbols.size > 1)
    .map(([name, symbols]) => `${name}: ${[...new Set(symbols.values())].sort().join(', ')}`)
    .sort();
}

describe('exported names', () => {
  it('no two modules export different things under one name', () => {
    expect(sharedNames(root, sourceFiles(root))).toEqual([]);
  });

  it('names a name two modules declare, and not one a barrel re-exports', () => {
    const dir = mkdtempSync(join(tmpdir(), 'names-'));
    const files = Object.entries({
      'a.ts': 'export const Verdict = 1;\nexport interface Shared {}\n',
      'b.ts': 'export type Verdict = string;\n',
      'index.ts': "export { Verdict as Renamed, type Shared } from './a.js';\nexport * as b from './b.js';\n",
    }).map(([name, text]) => (writeFileSync(join(dir, name), text), join(dir, name)));
    expect(sharedNames(dir, files)).toEqual(['Verdict: a, b']);
  });
});
