/**
 * Vitest global setup: the process tests spawn the built CLI (and a child that imports dist/), so dist/
 * must match src/ before any test runs. Rebuilds only when some source is newer than its output, so a
 * run after `npm run build` pays nothing.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield path;
  }
}

function mtime(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

function stale(): boolean {
  const src = join(ROOT, 'src');
  for (const source of sources(src)) {
    const built = mtime(join(ROOT, 'dist', relative(src, source).replace(/\.ts$/, '.js')));
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
