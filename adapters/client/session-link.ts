/**
 * One session's stream as the client holds it (3.1 rules 3 and 4): the `clientSubscription` statechart run
 * against fetch. It opens once a task or a holder needs it, reads every frame, settles the tasks they
 * name, and closes when no task is open and nobody holds it. A dropped stream is opened again after a
 * backoff with full jitter (or a 429's `Retry-After`), waited on the client's clock, from the newest
 * terminal reply's id. Browser-safe.
 */
import {
  evolveClientSubscription,
  initialClientSubscription,
  type ClientSubscriptionEvent,
  type ClientSubscriptionSnapshot,
} from '../../machines/client/client-subscription.js';
import type { ClientTaskEvent } from '../../machines/client/client-task.js';
import { fullJitter } from '../../protocol/backoff.js';
import { SseParser, textChunks, type SseEvent } from '../../protocol/sse-parser.js';
import { ErrorBody, ProgressReply, ResyncFrame, TerminalReply } from '../../protocol/wire.js';
import { retryAfterMs, safeJson } from './answers.js';
import { sleep } from '../../engine/core/clock.js';
import type { FormASettings } from './form-a-options.js';
import { TaskFailed, isOpen, stepTask, type Task } from './task.js';

/**
 * A well-formed cursor no session issued: a stream that drops before any terminal reply reconnects with
 * it, and so gets the whole retained backlog and a resync frame (PROTOCOL.md 2.3) rather than only live
 * frames, which would miss replies sent while it was away.
 */
const NO_CURSOR_YET = '0:0:1';

export class SessionLink {
  snapshot: ClientSubscriptionSnapshot;
  readonly tasks = new Map<string, Task>();
  /** Holders keep the stream open whatever its tasks (rule 4: a recording owns its `insights:` stream). */
  holds = 0;
  private readonly seenMessages = new Set<string>();
  private readonly aborter = new AbortController();
  /** Resolves once the stream is open for the first time; dispatch waits for it. */
  readonly opened: Promise<void>;
  private markOpened!: () => void;
  private failOpen!: (error: TaskFailed) => void;

  constructor(
    readonly sessionId: string,
    private readonly options: FormASettings,
    /** Where the session's previous stream left off: this one resumes from it. */
    private readonly resumeFrom: string | undefined,
    private readonly onClosed: () => void,
  ) {
    this.snapshot = initialClientSubscription(sessionId);
    this.opened = new Promise((resolve, reject) => {
      this.markOpened = resolve;
      this.failOpen = reject;
    });
    this.opened.catch(() => undefined);
    void this.run();
  }

  get closed(): boolean {
    return this.snapshot.value === 'closed';
  }

  /** Aborts when the link closes: a wait on its behalf ends then. */
  get signal(): AbortSignal {
    return this.aborter.signal;
  }

  /** Closes the stream once no task waits on it any more (rule 3), unless it is held. */
  settleCheck(): void {
    if (this.holds > 0 || [...this.tasks.values()].some(isOpen)) return;
    this.close();
  }

  close(): void {
    if (this.closed) return;
    this.step({ type: 'close', at: this.options.clock.now() });
    this.aborter.abort();
    this.refuseOpen('closed', 'the client closed');
    this.options.onStream?.(this.sessionId, 'closed');
    this.onClosed();
  }

  /** A task's event; once the task has ended, the stream may close. */
  settle(task: Task, event: ClientTaskEvent): void {
    if (stepTask(task, event, this.options.inspect)) this.settleCheck();
  }

  private step(event: ClientSubscriptionEvent): void {
    this.snapshot = evolveClientSubscription(this.snapshot, event);
    this.options.inspect?.({ machine: 'clientSubscription', session_id: this.sessionId, event, snapshot: this.snapshot });
  }

  private async run(): Promise<void> {
    const { clock } = this.options;
    while (!this.closed) {
      const retry = await this.connect();
      if (this.closed || retry === undefined) return;
      this.options.onStream?.(this.sessionId, 'waiting');
      await sleep(clock, retry - clock.now(), this.aborter.signal);
      if (!this.closed) this.step({ type: 'retry', at: clock.now() });
    }
  }

  /** One connection, to its end; when to try again, or `undefined` for never. */
  private async connect(): Promise<number | undefined> {
    const { cursor, opened } = this.snapshot.context;
    const lastEventId = cursor ?? this.resumeFrom ?? (opened > 0 ? NO_CURSOR_YET : undefined);
    let response: Response;
    try {
      response = await fetch(`${this.options.url}/v1/events?session_id=${encodeURIComponent(this.sessionId)}`, {
        headers: {
          authorization: `Bearer ${this.options.token}`,
          accept: 'text/event-stream',
          ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }),
        },
        signal: this.aborter.signal,
      });
    } catch {
      return this.fail('stream.failed', undefined);
    }
    // 204: the session has ended; no stream will come (PROTOCOL.md 3).
    if (response.status === 204) {
      this.refuseAll('session_ended', 'the session has ended');
      return undefined;
    }
    if (response.status !== 200 || response.body === null) {
      const body = await response.text().catch(() => '');
      if (response.status === 429 || response.status >= 500) return this.fail('stream.failed', retryAfterMs(response, this.options.clock));
      // Any other refusal (a wrong token, a bad session id) will not pass by trying again.
      const error = ErrorBody.safeParse(safeJson(body));
      if (error.success) this.refuseAll(error.data.error.code, error.data.error.message);
      else this.refuseAll(`http_${response.status}`, body.slice(0, 200));
      return undefined;
    }
    this.step({ type: 'stream.opened', at: this.options.clock.now() });
    this.options.onStream?.(this.sessionId, 'open');
    this.markOpened();
    const parser = new SseParser();
    try {
      for await (const chunk of textChunks(response.body)) {
        for (const event of parser.feed(chunk)) this.onEvent(event);
        if (this.closed) return undefined;
      }
    } catch {
      // Cut: fall through to a retry.
    }
    return this.fail('stream.dropped', undefined);
  }

  private fail(type: 'stream.failed' | 'stream.dropped', retryAfter: number | undefined): number | undefined {
    if (this.closed) return undefined;
    const { clock, random, backoff } = this.options;
    const wait = retryAfter ?? fullJitter(this.snapshot.context.failures + 1, random, backoff);
    const at = clock.now();
    this.step({ type, retry_at: at + wait, at });
    return at + wait;
  }

  private refuseAll(code: string, message: string): void {
    this.failOpen(new TaskFailed('refused', code, message));
    this.refuseOpen(code, message);
    this.close();
  }

  private refuseOpen(code: string, message: string): void {
    const at = this.options.clock.now();
    for (const task of this.tasks.values()) if (isOpen(task)) this.settle(task, { type: 'task.refused', code, message, at });
  }

  private onEvent(event: SseEvent): void {
    const at = this.options.clock.now();
    const json = safeJson(event.data);
    if (event.event === 'resync') {
      const frame = ResyncFrame.safeParse(json);
      // Only the tasks it names are lost; an unnamed one is never inferred lost, recovery_complete or not.
      if (!frame.success) return;
      const missed = new Set(frame.data.missed_task_ids);
      for (const id of [...this.tasks.keys()]) this.to(id, { type: missed.has(id) ? 'resync.missed' : 'resync.unlisted', at });
      return;
    }
    if (event.id !== undefined) {
      this.step({ type: 'reply.id', id: event.id, at });
      const reply = TerminalReply.safeParse(json);
      if (!reply.success) return;
      if (reply.data.status === 'message') {
        if (this.seenMessages.has(reply.data.message_id)) return;
        this.seenMessages.add(reply.data.message_id);
      }
      this.to(reply.data.task_id, { type: 'reply.terminal', reply: reply.data, at });
      return;
    }
    const progress = ProgressReply.safeParse(json);
    if (progress.success) this.to(progress.data.task_id, { type: 'reply.progress', reply: progress.data, at });
  }

  private to(taskId: string, event: ClientTaskEvent): void {
    const task = this.tasks.get(taskId);
    // Another client's task, or one settled already: not this client's to act on.
    if (task !== undefined && isOpen(task)) this.settle(task, event);
  }
}
