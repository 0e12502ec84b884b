/**
 * The relay's result checker (PROTOCOL.md 6.12). Within the bounds of 6.10 a hostile schema and result
 * can still take seconds to check, and a result that does not conform leaves its job open to be posted
 * again: on the event loop, that would freeze the backend for every tenant. So a check whose estimated
 * work (protocol/check-work.ts) is small runs at once, on the event loop (every job of the purposes'
 * own schemas does: no thread hop on the hot path); a costly one runs in a worker thread, within a time
 * budget past which the worker is terminated and replaced and the result refused as too costly. Costly
 * checks are bounded: a few threads, a queue that holds at most one check per integration, in the order
 * they came (one tenant's checks cannot crowd out another's), and a bound on the whole queue; past
 * either, the caller is told to come back (429). An estimate is never refused unrun: it is an upper
 * bound, often far from what a check costs, and the budget is what limits.
 */
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { checkWork } from '../../protocol/check-work.js';
import { packageFile } from '../../protocol/package-files.js';
import { inlineResultChecker, type ResultCheck, type ResultChecker, type ResultVerdict } from '../../engine/reasoning/result-check.js';
import type { CheckerMessage } from './result-check-worker.js';

export interface ResultCheckLimits {
  /** How long one check may run in its thread before it is terminated and the result refused. */
  readonly timeoutMs: number;
  /** Threads that check at once. */
  readonly workers: number;
  /** Checks that may wait for a thread, beyond those running. */
  readonly maxQueued: number;
  /** Checks estimated at most this much work (members × bytes) run at once, on the event loop: a few milliseconds at most. */
  readonly inlineWork: number;
}

export const DEFAULT_RESULT_CHECK_LIMITS: ResultCheckLimits = { timeoutMs: 2_000, workers: 2, maxQueued: 16, inlineWork: 1024 * 1024 };

/** The checking thread's module: built JavaScript beside this one; run from the sources (the tests), the built one in dist/, which their setup builds first. */
function workerFile(): URL {
  const beside = new URL('./result-check-worker.js', import.meta.url);
  return existsSync(beside) ? beside : packageFile('dist/adapters/backend/result-check-worker.js', import.meta.url, 2);
}

interface Task {
  readonly check: ResultCheck;
  readonly resolve: (verdict: ResultVerdict) => void;
  readonly reject: (error: unknown) => void;
}

export class ResultChecks implements ResultChecker {
  private readonly limits: ResultCheckLimits;
  private readonly threads: CheckingThread[];
  private readonly waiting: Task[] = [];
  /** Integrations with a costly check running or waiting. */
  private readonly holders = new Set<string>();

  constructor(limits: Partial<ResultCheckLimits> = {}) {
    this.limits = { ...DEFAULT_RESULT_CHECK_LIMITS, ...limits };
    const { timeoutMs, workers, maxQueued, inlineWork } = this.limits;
    if (!(timeoutMs >= 1)) throw new RangeError('resultChecks.timeoutMs must be at least 1');
    if (!Number.isSafeInteger(workers) || workers < 1) throw new RangeError('resultChecks.workers must be a whole number, at least 1');
    if (!Number.isSafeInteger(maxQueued) || maxQueued < 0)
      throw new RangeError('resultChecks.maxQueued must be a whole number, at least 0');
    if (!(inlineWork >= 0)) throw new RangeError('resultChecks.inlineWork must not be negative');
    const file = workerFile();
    this.threads = Array.from({ length: workers }, () => new CheckingThread(file, timeoutMs));
  }

  check(check: ResultCheck): ResultVerdict | Promise<ResultVerdict> {
    if (checkWork(check.schema, check.bytes) <= this.limits.inlineWork) return inlineResultChecker.check(check);
    if (this.holders.has(check.integrationId)) return this.busy('this integration has a costly result check under way');
    if (this.holders.size >= this.limits.workers + this.limits.maxQueued)
      return this.busy('the backend has the most costly result checks under way and waiting it takes');
    this.holders.add(check.integrationId);
    const verdict = new Promise<ResultVerdict>((resolve, reject) => this.waiting.push({ check, resolve, reject }));
    this.pump();
    return verdict.finally(() => this.holders.delete(check.integrationId));
  }

  /** Costly checks running in a thread now. */
  get running(): number {
    return this.threads.filter((thread) => thread.busy).length;
  }

  /** Costly checks waiting for a thread. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Terminates the threads; a check under way is refused as too costly. */
  async close(): Promise<void> {
    await Promise.all(this.threads.map((thread) => thread.close()));
  }

  /** Every check running and waiting may take its whole budget: after that, there is room. */
  private busy(why: string): ResultVerdict {
    const { timeoutMs, workers } = this.limits;
    const retry_after_s = Math.max(1, Math.ceil((timeoutMs * Math.ceil(this.holders.size / workers)) / 1000));
    return { outcome: 'busy', retry_after_s, message: `${why}; try again after Retry-After` };
  }

  private pump(): void {
    for (const thread of this.threads) {
      if (thread.busy || this.waiting.length === 0) continue;
      const task = this.waiting.shift()!;
      thread
        .run(task.check)
        .then(task.resolve, task.reject)
        .finally(() => this.pump());
    }
  }
}

/** One worker thread, started when first needed and again after it is terminated. */
class CheckingThread {
  busy = false;
  private worker: Promise<Worker> | undefined;
  private closed = false;

  constructor(
    private readonly file: URL,
    private readonly timeoutMs: number,
  ) {}

  async run({ schema, result }: ResultCheck): Promise<ResultVerdict> {
    this.busy = true;
    try {
      const worker = await this.started();
      return await new Promise<ResultVerdict>((resolve, reject) => {
        const done = () => {
          clearTimeout(budget);
          worker.off('message', answered).off('exit', exited);
        };
        // The budget counts the check alone: the thread is ready, its modules loaded.
        const budget = setTimeout(() => {
          done();
          this.replace();
          resolve({
            outcome: 'too_costly',
            message: `checking the result against the job's response_schema took longer than the ${this.timeoutMs} ms this backend gives one check`,
          });
        }, this.timeoutMs);
        const answered = (message: CheckerMessage) => {
          done();
          if ('failed' in message) reject(new Error(`a result check failed: ${message.failed}`));
          else if ('problem' in message) resolve({ outcome: 'checked', problem: message.problem });
        };
        const exited = (code: number) => {
          done();
          this.worker = undefined;
          if (this.closed) resolve({ outcome: 'too_costly', message: 'the backend is closing: the result was not checked' });
          else reject(new Error(`a result check's thread exited (${code})`));
        };
        worker.on('message', answered).on('exit', exited);
        worker.postMessage({ schema, result });
      });
    } finally {
      this.busy = false;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    if (worker !== undefined) await (await worker.catch(() => undefined))?.terminate();
  }

  private started(): Promise<Worker> {
    this.worker ??= new Promise<Worker>((resolve, reject) => {
      const worker = new Worker(this.file);
      // A thread kept for the next check must not keep the process alive.
      worker.unref();
      worker.once('message', () => resolve(worker));
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`a result check's thread exited (${code}) before it was ready`)));
    }).catch((error: unknown) => {
      this.worker = undefined;
      throw error;
    });
    return this.worker;
  }

  /** Terminated, and another started at once: the next check finds it ready. */
  private replace(): void {
    const worker = this.worker;
    this.worker = undefined;
    void worker?.then((stopped) => stopped.terminate()).catch(() => undefined);
    if (!this.closed) this.started().catch(() => undefined);
  }
}
