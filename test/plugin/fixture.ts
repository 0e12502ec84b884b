/** A fake backend, a folder and plugins per test, and the test reasoners. */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino, type BaseLogger } from 'pino';
import { afterEach, beforeEach } from 'vitest';
import { Plugin, type PluginOptions } from '../../adapters/plugin/index.js';
import type { Reasoner, ReasoningRequest } from '../../adapters/reasoners/reasoner.js';
import { tempDir } from '../support/host.js';
import { verifyLogFile } from '../support/verify-log.js';
import { FakeBackend, INTEGRATION, RELAY_TOKEN } from './fake-backend.js';

/** Answers with the payload's `answer`, or with one fixed insight; counts its calls. */
export function answering(): Reasoner & { calls: ReasoningRequest[] } {
  const calls: ReasoningRequest[] = [];
  return {
    name: 'answering',
    calls,
    async reason(request) {
      calls.push(request);
      return (
        (request.payload.answer as Record<string, unknown> | undefined) ?? {
          insights: [{ text: 'said hello', kind: 'fact', confidence: 1 }],
        }
      );
    },
  };
}

/** Never answers; rejects when its signal aborts (or, `deaf`, not even then). */
export function hanging(options: { deaf?: boolean } = {}): Reasoner & { calls: ReasoningRequest[] } {
  const calls: ReasoningRequest[] = [];
  return {
    name: 'hanging',
    calls,
    reason(request) {
      calls.push(request);
      return new Promise((_resolve, reject) => {
        if (!options.deaf) request.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
      });
    },
  };
}

export function throwing(error: unknown): Reasoner {
  return {
    name: 'throwing',
    async reason() {
      throw error;
    },
  };
}

/** A pino logger whose lines (parsed) land in `lines`. */
export function capturingLogger(): { logger: BaseLogger; lines: Array<{ level: number; msg: string } & Record<string, unknown>> } {
  const lines: Array<{ level: number; msg: string } & Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

export interface PluginFixture {
  readonly backend: () => FakeBackend;
  readonly dir: () => string;
  /** Starts a plugin on the fake backend with `db` in the test's folder; stopped after the test. */
  start(options: Partial<PluginOptions> & Pick<PluginOptions, 'reasoner'>): Promise<Plugin>;
  /** Starts a plugin and waits until its stream is open. */
  open(options: Partial<PluginOptions> & Pick<PluginOptions, 'reasoner'>): Promise<{ plugin: Plugin; backend: FakeBackend }>;
}

/** Until the plugin owes nothing more for the job. */
export function closed(plugin: Plugin, job: Record<string, unknown>): () => boolean {
  return () => plugin.status().jobs[job.job_id as string] === 'closed';
}

export function usePlugins(): PluginFixture {
  let backend: FakeBackend | undefined;
  let dir: string | undefined;
  const plugins: Plugin[] = [];
  beforeEach(async () => {
    backend = await FakeBackend.start();
    dir = tempDir();
  });
  afterEach(async () => {
    await Promise.all(plugins.splice(0).map((p) => p.stop()));
    await backend?.close();
    if (dir === undefined) return;
    try {
      // Every plugin log a test wrote folds alike twice (replay --verify).
      await verifyLogFile(join(dir, 'plugin.db'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  const fixture: PluginFixture = {
    backend: () => backend!,
    dir: () => dir!,
    async open(options) {
      const plugin = await fixture.start(options);
      await backend!.until(() => plugin.status().stream === 'open', 'the stream');
      return { plugin, backend: backend! };
    },
    async start(options) {
      const plugin = new Plugin({
        backendUrl: backend!.url,
        integrationId: INTEGRATION,
        relayToken: RELAY_TOKEN,
        db: join(dir!, 'plugin.db'),
        providerKind: 'test-provider',
        stopGraceMs: 0,
        ...options,
      });
      plugins.push(plugin);
      await plugin.start();
      return plugin;
    },
  };
  return fixture;
}
