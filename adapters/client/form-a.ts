/**
 * The client's side of Form A (3.1, 4.2), as a desktop, mobile or browser app runs it. Browser-safe.
 *
 * - `send(session, text)` opens the session's subscription first, then dispatches (rule 1: dispatch is
 *   not completion), and gives a task handle: its progress as it comes, and a promise of its one terminal
 *   reply. An approval such as `/approve` is just another task (rule 2).
 * - One physical stream per session, shared by every pending task, closed when the last one settles
 *   (rule 3). A dropped stream is opened again after a backoff with full jitter (or a 429's
 *   `Retry-After`), from the newest terminal reply's id; replies are deduped by `message_id`.
 * - A resync frame fails exactly the tasks it names (their replies were evicted); a task it does not name
 *   is never taken for lost, even when `recovery_complete` is false (3.1, 7).
 * - It never sends a `callback` block (1.6).
 *
 * The task and the subscription are the statecharts `machines/client-task.ts` and
 * `machines/client-subscription.ts`; this module runs them against fetch.
 */
import { SseParser, textChunks, type SseEvent } from '../../protocol/sse-parser.js';
import { clientTaskState, evolveClientTask, initialClientTask, type ClientTaskEvent, type ClientTaskSnapshot } from '../../machines/client/client-task.js';
import { evolveClientSubscription, initialClientSubscription, type ClientSubscriptionEvent, type ClientSubscriptionSnapshot } from '../../machines/client/client-subscription.js';
import { parseRetryAfter } from '../../protocol/retry-after.js';
import { ErrorBody, IncomingAccepted, IncomingIgnored, ProgressReply, ResyncFrame, TerminalReply } from '../../protocol/wire.js';
import { fullJitter } from '../../protocol/backoff.js';

/** Why a task ended without its reply. */
export class TaskFailed extends Error {
  constructor(
    /** `lost`: a resync named it; `refused`: the host refused it (see `reason`); `closed`: the client closed first. */
    readonly kind: 'lost' | 'refused' | 'closed',
    /** The host's error code (or `session_ended`), for a refused task. */
    readonly reason: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

export interface TaskHandle {
  readonly session_id: string;
  readonly task_id: string;
  /** Its one terminal reply; rejects with `TaskFailed`. */
  readonly reply: Promise<TerminalReply>;
  /** Progress as it comes (typing, tool calls); the function returned stops listening. */
  onProgress(listener: (progress: ProgressReply) => void): () => void;
  /** The task's statechart as it stands. */
  readonly state: ClientTaskSnapshot;
}

export interface FormAClientOptions {
  /** The host's base URL. */
  readonly url: string;
  /** Its ASSISTANT_TOKEN. */
  readonly token: string;
  /** First backoff step and ceiling, ms. Default 250 ms and 30 s. */
  readonly backoff?: { readonly baseMs: number; readonly capMs: number };
  /** Jitter (default `Math.random`). */
  readonly random?: () => number;
  /** Told of each stream the client opens or loses, for a UI that shows "reconnecting". */
  readonly onStream?: (session_id: string, state: 'open' | 'waiting' | 'closed') => void;
  /** Told of every event the client's statecharts take and the snapshot it leaves: for a debugger, or a test that follows the machines. */
  readonly inspect?: (transition: ClientTransition) => void;
}

/** One step of a task's or a session subscription's statechart. */
export type ClientTransition =
  | { readonly machine: 'clientTask'; readonly session_id: string; readonly task_id: string; readonly event: ClientTaskEvent; readonly snapshot: ClientTaskSnapshot }
  | { readonly machine: 'clientSubscription'; readonly session_id: string; readonly event: ClientSubscriptionEvent; readonly snapshot: ClientSubscriptionSnapshot };

/**
 * A well-formed cursor no session issued: a stream that drops before any terminal reply reconnects with
 * it, and so gets the whole retained backlog and a resync frame (PROTOCOL.md 2.3) rather than only live
 * frames, which would miss replies sent while it was away.
 */
const NO_CURSOR_YET = '0:0:1';
const POST_ATTEMPTS = 5;

interface Task {
  snapshot: ClientTaskSnapshot;
  readonly listeners: Set<(progress: ProgressReply) => void>;
  resolve(reply: TerminalReply): void;
  reject(error: TaskFailed): void;
}

const isOpen = (task: Task) => {
  const state = clientTaskState(task.snapshot);
  return state === 'sending' || state === 'pending';
};

/** One session's stream and the tasks waiting on it. */
class SessionLink {
  snapshot: ClientSubscriptionSnapshot;
  readonly tasks = new Map<string, Task>();
  private readonly seenMessages = new Set<string>();
  private readonly aborter = new AbortController();
  /** Resolves once the stream is open for the first time; dispatch waits for it. */
  readonly opened: Promise<void>;
  private markOpened!: () => void;
  private failOpen!: (error: TaskFailed) => void;

  constructor(
    readonly sessionId: string,
    private readonly client: FormAClient,
    private readonly options: FormAClientOptions,
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

  /** Holds the stream open whatever its tasks (rule 4: a recording owns its `insights:` stream). */
  holds = 0;

  /** Closes the stream once no task waits on it any more (rule 3), unless it is held. */
  settleCheck(): void {
    if (this.holds > 0 || [...this.tasks.values()].some(isOpen)) return;
    this.close();
  }

  close(): void {
    if (this.closed) return;
    this.step({ type: 'close', at: Date.now() });
    this.aborter.abort();
    for (const task of this.tasks.values()) if (isOpen(task)) this.client.settle(this, task, { type: 'task.refused', code: 'closed', message: 'the client closed', at: Date.now() });
    this.options.onStream?.(this.sessionId, 'closed');
    this.onClosed();
  }

  private step(event: ClientSubscriptionEvent): void {
    this.snapshot = evolveClientSubscription(this.snapshot, event);
    this.options.inspect?.({ machine: 'clientSubscription', session_id: this.sessionId, event, snapshot: this.snapshot });
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      const retry = await this.connect();
      if (this.closed || retry === undefined) return;
      this.options.onStream?.(this.sessionId, 'waiting');
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, retry - Date.now())));
      if (!this.closed) this.step({ type: 'retry', at: Date.now() });
    }
  }

  /** One connection, to its end; when to try again, or `undefined` for never. */
  private async connect(): Promise<number | undefined> {
    const { cursor, opened } = this.snapshot.context;
    const lastEventId = cursor ?? this.resumeFrom ?? (opened > 0 ? NO_CURSOR_YET : undefined);
    let response: Response;
    try {
      response = await fetch(`${this.options.url}/v1/events?session_id=${encodeURIComponent(this.sessionId)}`, {
        headers: { authorization: `Bearer ${this.options.token}`, accept: 'text/event-stream', ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) },
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
      if (response.status === 429 || response.status >= 500) return this.fail('stream.failed', retryAfterMs(response));
      // Any other refusal (a wrong token, a bad session id) will not pass by trying again.
      const error = ErrorBody.safeParse(safeJson(body));
      this.refuseAll(error.success ? error.data.error.code : `http_${response.status}`, error.success ? error.data.error.message : body.slice(0, 200));
      return undefined;
    }
    this.step({ type: 'stream.opened', at: Date.now() });
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
    const wait = retryAfter ?? fullJitter(this.snapshot.context.failures + 1, this.options.random ?? Math.random, this.options.backoff);
    const retry_at = Date.now() + wait;
    this.step({ type, retry_at, at: Date.now() });
    return retry_at;
  }

  private refuseAll(code: string, message: string): void {
    this.failOpen(new TaskFailed('refused', code, message));
    for (const task of this.tasks.values()) if (isOpen(task)) this.client.settle(this, task, { type: 'task.refused', code, message, at: Date.now() });
    this.close();
  }

  private onEvent(event: SseEvent): void {
    const at = Date.now();
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
    if (task !== undefined && isOpen(task)) this.client.settle(this, task, event);
  }
}

export class FormAClient {
  private readonly links = new Map<string, SessionLink>();
  /** Each session's newest terminal reply id, kept after its stream closes (rule 3 closes the stream, not the session). */
  private readonly cursors = new Map<string, string>();

  constructor(private readonly options: FormAClientOptions) {}

  /** Sends `text` as a new task of the session (a fresh `task_id` unless given: the same again is the same task). */
  send(sessionId: string, text: string, extra: { readonly task_id?: string; readonly system_prelude?: string } = {}): TaskHandle {
    const taskId = extra.task_id ?? crypto.randomUUID();
    const link = this.linkOf(sessionId);
    let resolve!: (reply: TerminalReply) => void;
    let reject!: (error: TaskFailed) => void;
    const reply = new Promise<TerminalReply>((ok, fail) => {
      resolve = ok;
      reject = fail;
    });
    reply.catch(() => undefined);
    const task: Task = { snapshot: initialClientTask({ session_id: sessionId, task_id: taskId, at: Date.now() }), listeners: new Set(), resolve, reject };
    link.tasks.set(taskId, task);
    void this.dispatch(link, task, text, extra.system_prelude);
    return {
      session_id: sessionId,
      task_id: taskId,
      reply,
      onProgress: (listener) => {
        task.listeners.add(listener);
        return () => task.listeners.delete(listener);
      },
      get state() {
        return task.snapshot;
      },
    };
  }

  /**
   * Opens the session's stream and keeps it open until the function returned is called, whatever its
   * tasks (3.1 rule 4: a recording owns its `insights:` subscription for its lifetime). Resolves once
   * the stream is open.
   */
  async hold(sessionId: string): Promise<() => void> {
    const link = this.linkOf(sessionId);
    link.holds += 1;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      link.holds -= 1;
      link.settleCheck();
    };
    try {
      await link.opened;
    } catch (error) {
      release();
      throw error;
    }
    return release;
  }

  /** The id of the session's newest terminal reply this client read. */
  cursor(sessionId: string): string | undefined {
    return this.links.get(sessionId)?.snapshot.context.cursor ?? this.cursors.get(sessionId);
  }

  /** The session's subscription as it stands, while it has one. */
  subscription(sessionId: string): ClientSubscriptionSnapshot | undefined {
    return this.links.get(sessionId)?.snapshot;
  }

  /** Closes every stream; pending tasks fail `closed`. */
  close(): void {
    for (const link of [...this.links.values()]) link.close();
  }

  /** @internal A task's event: its statechart moves, and its handle hears of it. */
  settle(link: SessionLink, task: Task, event: ClientTaskEvent): void {
    task.snapshot = evolveClientTask(task.snapshot, event);
    const context = task.snapshot.context;
    this.options.inspect?.({ machine: 'clientTask', session_id: context.session_id, task_id: context.task_id, event, snapshot: task.snapshot });
    switch (clientTaskState(task.snapshot)) {
      case 'replied':
        task.resolve(context.reply!);
        break;
      case 'lost':
        task.reject(new TaskFailed('lost', undefined, `task ${context.task_id}: its reply was evicted before this client read it (named in a resync frame)`));
        break;
      case 'refused':
        task.reject(new TaskFailed(context.refusal!.code === 'closed' ? 'closed' : 'refused', context.refusal!.code, context.refusal!.message));
        break;
      default:
        if (event.type === 'reply.progress') for (const listener of task.listeners) listener(event.reply);
        return;
    }
    link.settleCheck();
  }

  private linkOf(sessionId: string): SessionLink {
    const existing = this.links.get(sessionId);
    if (existing !== undefined && !existing.closed) return existing;
    const link: SessionLink = new SessionLink(sessionId, this, this.options, this.cursor(sessionId), () => {
      const { cursor } = link.snapshot.context;
      if (cursor !== undefined) this.cursors.set(sessionId, cursor);
      if (this.links.get(sessionId) === link) this.links.delete(sessionId);
    });
    this.links.set(sessionId, link);
    return link;
  }

  /** Opens the subscription first (3.1), then posts the task, trying again while the host is unreachable. */
  private async dispatch(link: SessionLink, task: Task, text: string, systemPrelude: string | undefined): Promise<void> {
    const { session_id, task_id } = task.snapshot.context;
    try {
      await link.opened;
    } catch (error) {
      if (isOpen(task)) this.settle(link, task, { type: 'task.refused', code: (error as TaskFailed).reason ?? 'refused', message: (error as Error).message, at: Date.now() });
      return;
    }
    const body = JSON.stringify({ session_id, task_id, text, ...(systemPrelude === undefined ? {} : { system_prelude: systemPrelude }) });
    for (let attempt = 1; isOpen(task); attempt += 1) {
      let response: Response | undefined;
      try {
        response = await fetch(`${this.options.url}/v1/incoming`, {
          method: 'POST',
          headers: { authorization: `Bearer ${this.options.token}`, 'content-type': 'application/json' },
          body,
        });
      } catch {
        response = undefined;
      }
      if (!isOpen(task)) return;
      const json = response === undefined ? undefined : safeJson(await response.text());
      if (response !== undefined && response.ok) {
        const ignored = IncomingIgnored.safeParse(json);
        if (ignored.success) this.settle(link, task, { type: 'task.refused', code: 'session_ended', message: 'the session has ended', at: Date.now() });
        else if (IncomingAccepted.safeParse(json).success && clientTaskState(task.snapshot) === 'sending') this.settle(link, task, { type: 'task.accepted', at: Date.now() });
        return;
      }
      // The same task_id again is the same task: a POST whose answer was lost is safe to send again.
      const transient = response === undefined || response.status === 429 || response.status >= 500;
      if (!transient || attempt >= POST_ATTEMPTS) {
        const error = ErrorBody.safeParse(json);
        const code = error.success ? error.data.error.code : response === undefined ? 'unreachable' : `http_${response.status}`;
        this.settle(link, task, { type: 'task.refused', code, message: error.success ? error.data.error.message : 'the host could not be reached', at: Date.now() });
        return;
      }
      const wait = (response === undefined ? undefined : retryAfterMs(response)) ?? fullJitter(attempt + 1, this.options.random ?? Math.random);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function retryAfterMs(response: Response): number | undefined {
  return parseRetryAfter(response.headers.get('retry-after') ?? undefined, Date.now());
}
