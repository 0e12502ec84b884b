/** `npm run diagrams`: rewrites docs/statecharts/ from the machines, and ARCHITECTURE.md's module pictures from the sources. */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readModuleGraph, withModuleSection } from './modules.js';
import { statechartPages } from './statecharts.js';

// Two levels up from both src/visualizations/ and dist/visualizations/ is the package root.
const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const dir = root('docs/statecharts/');
mkdirSync(dir, { recursive: true });
for (const page of statechartPages()) {
  writeFileSync(dir + page.file, page.text);
  console.log(`wrote docs/statecharts/${page.file}`);
}
const architecture = root('ARCHITECTURE.md');
writeFileSync(architecture, withModuleSection(readFileSync(architecture, 'utf8'), readModuleGraph(root('src'))));
console.log('wrote the module pictures of ARCHITECTURE.md');
