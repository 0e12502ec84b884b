/** `npm run diagrams`: rewrites docs/statecharts/ from the machines. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { statechartPages } from './statecharts.js';

// Two levels up from both src/visualizations/ and dist/visualizations/ is the package root.
const dir = fileURLToPath(new URL('../../docs/statecharts/', import.meta.url));
mkdirSync(dir, { recursive: true });
for (const page of statechartPages()) {
  writeFileSync(dir + page.file, page.text);
  console.log(`wrote docs/statecharts/${page.file}`);
}
