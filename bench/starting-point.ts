/**
 * Issue 25's starting point, built from git for a comparison in the same run: the commit checked out in
 * a temporary git worktree, this checkout's node_modules linked in (the same dependencies), compiled with
 * its own tsconfig. The bench runs its CLI beside this checkout's, so that "not lower than where the issue
 * started" is a ratio of figures taken minutes apart on the same machine, not against a recorded figure.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './contenders.js';

/** Issue 25's starting point: the commit before its first. */
export const STARTING_POINT = '170b84b';

export interface StartingPoint {
  readonly commit: string;
  /** Its built CLI (dist/adapters/cli/main.js). */
  readonly cli: string;
  /** The worktree removed, and git's record of it. */
  readonly remove: () => void;
}

export function buildStartingPoint(commit = STARTING_POINT): StartingPoint {
  const dir = join(mkdtempSync(join(tmpdir(), 'assistant-relay-start-')), 'checkout');
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  const remove = () => {
    try {
      git('worktree', 'remove', '--force', dir);
    } catch {
      // Not made, or gone already: what is left on disk goes below.
    }
    rmSync(join(dir, '..'), { recursive: true, force: true });
  };
  try {
    git('worktree', 'add', '--detach', dir, commit);
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  } catch (error) {
    remove();
    throw new Error(`building the starting point ${commit}: ${(error as Error).message}`);
  }
  return { commit, cli: join(dir, 'dist/adapters/cli/main.js'), remove };
}
