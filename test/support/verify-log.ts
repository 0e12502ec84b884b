/**
 * Replay determinism for every suite (issue 12): the log a test's host or backend wrote, folded twice by
 * `replay --verify`'s own code and checked against every snapshot the process stored, must not part
 * anywhere. Called as a test's host or backend is removed, so every suite's logs are checked.
 */
import { existsSync } from 'node:fs';
import { BackendFold } from '../../src/engine/replay/backend.js';
import { HostFold, hostLimits } from '../../src/engine/replay/host.js';
import { snapshotCheck, verify } from '../../src/engine/replay/verify.js';
import { LogReader } from '../../src/storage/log-reader.js';

export async function verifyLog(db: string): Promise<void> {
  if (!existsSync(db)) return;
  const reader = LogReader.open(db);
  try {
    await reader.read({}, (view) => {
      if (view.kind !== 'host' && view.kind !== 'backend') return;
      const limits = view.kind === 'host' ? hostLimits(view.last('host.started')?.event) : undefined;
      const newFold = view.kind === 'host' ? () => new HostFold(limits!) : () => new BackendFold();
      const { difference } = verify<unknown>(newFold, view.events(), view.snapshots().map((stored) => snapshotCheck(stored, limits)));
      if (difference !== undefined) throw new Error(`replay --verify of ${db}: after event #${difference.position} (${difference.type}), ${difference.what}`);
    });
  } finally {
    reader.close();
  }
}
