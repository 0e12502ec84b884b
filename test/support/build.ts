/**
 * Vitest global setup: the process tests spawn the built CLI (and a child that imports dist/), so dist/
 * must match the sources before any test runs. Rebuilds only when some source is newer than its output, so a
 * run after `npm run build` pays nothing.
 */
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sourceFiles } from '../../visualizations/modules.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function mtime(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

function stale(): boolean {
  for (const source of sourceFiles(ROOT)) {
    const built = mtime(join(ROOT, 'dist', relative(ROOT, source).replace(/\.ts$/, '.js')));
    if (built === undefined || built < mtime(source)!) return true;
  }
  return false;
}

export default function setup(): void {
  if (!stale()) return;
  // The same compiler and config as `npm run build`, without npm's start-up cost; a type error fails the run.
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
      cwd: ROOT,
      stdio: 'inherit',
    });
  } catch {
    throw new Error('building dist/ failed (tsc -p tsconfig.build.json): see the compiler output above');
  }
}
