/**
 * Another commit's relay, built from git for a comparison in the same run (issue 25's starting point in
 * the jobs scenario; any commit for `--against`): the commit checked out in
 * a temporary git worktree, with this checkout's dependencies (each linked in) and those it had that this
 * one dropped (`npm pack` of its lockfile's version: @nats-io/jetstream), compiled with its own tsconfig. The bench runs its CLI beside this checkout's, so that "not lower than where the issue
 * started" is a ratio of figures taken minutes apart on the same machine, not against a recorded figure.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
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
    dependencies(dir);
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: dir });
  } catch (error) {
    remove();
    const { stdout, message } = error as { stdout?: Buffer; message: string };
    throw new Error(
      `building the starting point ${commit}: ${message}${stdout === undefined ? '' : `\n${String(stdout).slice(0, 2_000)}`}`,
    );
  }
  return { commit, cli: join(dir, 'dist/adapters/cli/main.js'), remove };
}

/** The checkout's node_modules: each of this one's packages linked, and those only it names fetched at its lockfile's version. */
function dependencies(dir: string): void {
  const modules = join(dir, 'node_modules');
  const linked = (name: string) => {
    const scope = name.includes('/') ? join(modules, name.split('/')[0]!) : modules;
    mkdirSync(scope, { recursive: true });
    symlinkSync(join(ROOT, 'node_modules', name), join(modules, name));
  };
  for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
    if (entry.startsWith('.')) continue;
    if (entry.startsWith('@')) for (const inner of readdirSync(join(ROOT, 'node_modules', entry))) linked(`${entry}/${inner}`);
    else linked(entry);
  }
  const json = (file: string) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, Record<string, { version?: string }>>;
  const named = { ...json('package.json').dependencies, ...json('package.json').devDependencies };
  const locked = json('package-lock.json').packages!;
  for (const name of Object.keys(named).filter((each) => !existsSync(join(modules, each)))) {
    const version = locked[`node_modules/${name}`]?.version;
    if (version === undefined) throw new Error(`${name}: not in the starting point's lockfile`);
    const tarball = execFileSync('npm', ['pack', `${name}@${version}`, '--silent', '--pack-destination', join(dir, '..')], {
      encoding: 'utf8',
    }).trim();
    mkdirSync(join(modules, name), { recursive: true });
    execFileSync('tar', ['xzf', join(dir, '..', tarball), '--strip-components', '1', '-C', join(modules, name)]);
  }
}
