/**
 * `npm run diagrams`: rewrites what is generated from the code: docs/statecharts/ from the machines,
 * ARCHITECTURE.md's module pictures from the sources, and schemas/ from the reasoning channel's zod schemas.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname } from 'node:path';
import { schemaFiles } from '../protocol/json-schemas.js';
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
for (const { file, text } of schemaFiles()) {
  mkdirSync(dirname(root(`schemas/${file}`)), { recursive: true });
  writeFileSync(root(`schemas/${file}`), text);
}
console.log('wrote schemas/');
