/** An in-process host on loopback with a fresh SQLite file, for tests. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAssistantHost, type AssistantHost, type AssistantHostOptions } from '../../index.js';
import { verifyLogFile } from './verify-log.js';

export const TOKEN = 'test-token';

export interface TestHost {
  readonly host: AssistantHost;
  readonly url: string;
  readonly db: string;
  readonly dir: string;
  /** Closes the host (the file stays until `cleanup`). */
  close(): Promise<void>;
  /** Closes and removes the folder. */
  cleanup(): Promise<void>;
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'assistant-relay-test-'));
}

export async function startHost(options: Partial<AssistantHostOptions> & { dir?: string } = {}): Promise<TestHost> {
  const dir = options.dir ?? tempDir();
  const db = options.db ?? join(dir, 'relay.db');
  const host = await createAssistantHost({ token: TOKEN, agent: 'script', ...options, db });
  const url = await host.listen({ host: '127.0.0.1', port: 0 });
  return {
    host,
    url,
    db,
    dir,
    close: () => host.close(),
    async cleanup() {
      await host.close();
      await verifyLogFile(db);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Counts the rows of the event log file (read-only, without disturbing a running host). */
export { countEvents, readEvents } from './log.js';
