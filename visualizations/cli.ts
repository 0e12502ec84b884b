/**
 * `npm run diagrams`: rewrites what is generated from the code: docs/statecharts/ and ARCHITECTURE.md's
 * statechart pictures from the machines, ARCHITECTURE.md's module pictures from the sources, and schemas/
 * from the reasoning channel's zod schemas.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname } from 'node:path';
import { schemaFiles } from '../protocol/json-schemas.js';
import { packageFile } from '../protocol/package-files.js';
import { readModuleGraph, withModuleSection } from './modules.js';
import { statechartPages, withStatechartSection } from './statecharts.js';

const root = (path: string) => fileURLToPath(packageFile(path, import.meta.url, 1));
const dir = root('docs/statecharts/');
mkdirSync(dir, { recursive: true });
for (const { file, text } of await statechartPages()) {
  writeFileSync(dir + file, text);
  console.log(`wrote docs/statecharts/${file}`);
}
const architecture = root('ARCHITECTURE.md');
const sections = withStatechartSection(withModuleSection(readFileSync(architecture, 'utf8'), readModuleGraph(root('.'))));
writeFileSync(architecture, sections);
console.log('wrote the statechart and module pictures of ARCHITECTURE.md');
for (const { file, text } of schemaFiles()) {
  mkdirSync(dirname(root(`schemas/${file}`)), { recursive: true });
  writeFileSync(root(`schemas/${file}`), text);
}
console.log('wrote schemas/');
