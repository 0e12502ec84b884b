/**
 * `npm run diagrams`: rewrites what is generated from the code: docs/statecharts/ from the machines,
 * docs/modules.md's module list and pictures from the sources, and schemas/ from the reasoning channel's
 * zod schemas.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname } from 'node:path';
import { schemaFiles } from '../protocol/json-schemas.js';
import { packageFile } from '../protocol/package-files.js';
import { readModuleGraph, withModuleSection } from './modules.js';
import { statechartPages } from './statecharts.js';

const root = (path: string) => fileURLToPath(packageFile(path, import.meta.url, 1));
const dir = root('docs/statecharts/');
mkdirSync(dir, { recursive: true });
for (const { file, text } of await statechartPages()) {
  writeFileSync(dir + file, text);
  console.log(`wrote docs/statecharts/${file}`);
}
const modules = root('docs/modules.md');
writeFileSync(modules, withModuleSection(readFileSync(modules, 'utf8'), readModuleGraph(root('.'))));
console.log('wrote docs/modules.md');
for (const { file, text } of schemaFiles()) {
  mkdirSync(dirname(root(`schemas/${file}`)), { recursive: true });
  writeFileSync(root(`schemas/${file}`), text);
}
console.log('wrote schemas/');
