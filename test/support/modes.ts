/** What the CLI leaves on disk, judged by mode: every folder 0700 and every file 0600 (issue 23, part 7). */
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** Every file and folder under `root` (itself included, as `.`) with its permission bits, e.g. `['token', 0o600]`. */
export function modesUnder(root: string): Array<[string, number]> {
  const found: Array<[string, number]> = [];
  const walk = (path: string) => {
    const stat = statSync(path);
    found.push([relative(root, path) || '.', stat.mode & 0o777]);
    if (stat.isDirectory()) for (const name of readdirSync(path).sort()) walk(join(path, name));
  };
  walk(root);
  return found;
}

/** The entries of `modesUnder` that are not private: a folder not 0700, a file not 0600. */
export function notPrivate(root: string): string[] {
  return modesUnder(root)
    .filter(([path, mode]) => mode !== (statSync(join(root, path)).isDirectory() ? 0o700 : 0o600))
    .map(([path, mode]) => `${path} 0${mode.toString(8)}`);
}

/** Runs `spawn` with the process's umask at 0 (a child takes it when spawned): what it creates is as open as its own code makes it. */
export function withOpenUmask<T>(spawn: () => T): T {
  const umask = process.umask(0);
  try {
    return spawn();
  } finally {
    process.umask(umask);
  }
}
