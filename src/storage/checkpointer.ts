/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the commit that crosses
 * its threshold, fsync included: milliseconds on one unlucky turn, most of a lone turn's p99. The log's
 * writer turns it off; this worker thread, with a connection of its own, copies the WAL back into the
 * database once about `everyPages` pages were committed since the last time. PASSIVE: it never waits
 * for the writer nor makes it wait, and the writer restarts the WAL from its start once it is all copied.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** SQLite's own default for automatic checkpoints. */
export const DEFAULT_CHECKPOINT_PAGES = 1000;

// A script, not a module file: it runs the same from `src/` under the tests and from `dist/`.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('synchronous = ' + workerData.synchronous);
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage('done');
  } catch (error) {
    parentPort.postMessage(String(error && error.message));
  }
});
`;

export class Checkpointer {
  private worker: Worker | undefined;
  private pages = 0;
  private running = false;

  constructor(
    private readonly path: string,
    private readonly synchronous: 'NORMAL' | 'FULL',
    private readonly everyPages = DEFAULT_CHECKPOINT_PAGES,
    /** A checkpoint failed: not fatal (the WAL keeps everything; the next one retries), but worth a log line. */
    private readonly onError: (message: string) => void = () => {},
  ) {}

  /** Called after each commit with the pages it wrote, as near as the caller can tell. */
  committed(pages: number): void {
    this.pages += pages;
    if (this.running || this.pages < this.everyPages) return;
    this.running = true;
    this.pages = 0;
    // Started on first need: most short-lived logs (tests, tools) never get here.
    this.worker ??= this.start();
    this.worker.postMessage('checkpoint');
  }

  /** Lets a running checkpoint finish, then closes the worker's connection. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker === undefined) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage('close');
    await exited;
  }

  private start(): Worker {
    const worker = new Worker(WORKER, {
      eval: true,
      workerData: { path: this.path, synchronous: this.synchronous, driver: createRequire(import.meta.url).resolve('better-sqlite3') },
    });
    worker.on('message', (message: string) => {
      this.running = false;
      if (message !== 'done') this.onError(message);
    });
    worker.on('error', (error) => {
      this.running = false;
      this.worker = undefined;
      this.onError(error.message);
    });
    // A host that forgets to close must still be able to exit.
    worker.unref();
    return worker;
  }
}
