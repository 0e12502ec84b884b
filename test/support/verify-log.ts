/**
 * Replay determinism for every suite (issue 12): the log a test's host or backend wrote, folded twice by
 * `replay --verify`'s own code and checked against every snapshot the process stored, must not part
 * anywhere. Called as a test's host or backend is removed, so every suite's logs are checked.
 */
import { existsSync } from 'node:fs';
import { verifyLog } from '../../engine/replay/log.js';
import { LogReader } from '../../storage/log-reader.js';

export async function verifyLogFile(db: string): Promise<void> {
  if (!existsSync(db)) return;
  const reader = LogReader.open(db);
  try {
    await reader.read({}, (view) => {
      const { difference } = verifyLog(view);
      if (difference !== undefined)
        throw new Error(`replay --verify of ${db}: after event #${difference.position} (${difference.type}), ${difference.what}`);
    });
  } finally {
    reader.close();
  }
}
