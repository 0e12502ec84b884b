/** Who holds an event log's write lock, as the holder records it in `<log>.holder` (log-lock.ts) and a refused contender reports it (errors.ts). */
import { z } from 'zod';

/** Who holds a log, as it recorded itself when it took the lock; `since` is ISO 8601. */
export const LockHolder = z.object({ pid: z.number().int(), host: z.string(), since: z.string() }).readonly();
export type LockHolder = z.infer<typeof LockHolder>;
