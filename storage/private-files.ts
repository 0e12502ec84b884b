/**
 * Files only their owner may read: the event log holds callback tokens, the token file the host's own.
 * Modes are set with chmod after creation, because the mode given to open and mkdir passes through the
 * umask, which could widen nothing but could narrow the owner's own access.
 */
import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync, statSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Creates `folder` and its missing parents, each 0700; folders that exist already are left as they are. */
export function makePrivateFolder(folder: string): void {
  const target = resolve(folder);
  const first = mkdirSync(target, { recursive: true, mode: 0o700 });
  if (first === undefined) return;
  for (let created = target; ; created = dirname(created)) {
    chmodSync(created, 0o700);
    if (created === first) return;
  }
}

/** Creates `path` with `content`, mode 0600; false (and nothing written) if it exists already. */
export function createPrivateFile(path: string, content = ''): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    fchmodSync(fd, 0o600);
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * If any of `paths` exists with a permission bit for group or others, says which and what to run, e.g.
 * "relay.db (mode 0644) can be accessed by other users: run chmod 600 relay.db"; otherwise undefined.
 */
export function exposure(paths: readonly string[]): string | undefined {
  const exposed = paths.flatMap((path) => {
    const mode = statSync(path, { throwIfNoEntry: false })?.mode;
    return mode !== undefined && (mode & 0o077) !== 0 ? [{ path, mode: mode & 0o777 }] : [];
  });
  if (exposed.length === 0) return undefined;
  const files = exposed.map(({ path, mode }) => `${path} (mode 0${mode.toString(8)})`).join(', ');
  return `${files} can be accessed by other users: run chmod 600 ${exposed.map(({ path }) => shellWord(path)).join(' ')}`;
}

/** `path` as one shell word, so that the advice can be pasted as it is. */
function shellWord(path: string): string {
  return /^[\w./@%+=:,-]+$/.test(path) ? path : `'${path.replaceAll("'", `'\\''`)}'`;
}
