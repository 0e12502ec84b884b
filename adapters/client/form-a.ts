/**
 * The client's side of Form A (3.1, 4.2), as a desktop, mobile or browser app runs it. Browser-safe.
 *
 * - `send(session, text)` opens the session's subscription first, then dispatches (rule 1: dispatch is
 *   not completion), and gives a task handle: its progress as it comes, and a promise of its one terminal
 *   reply. An approval such as `/approve` is just another task (rule 2).
 * - One physical stream per session, shared by every pending task, closed when the last one settles
 *   (rule 3), unless the app holds it (`hold`). A dropped stream is opened again (session-link.ts);
 *   replies are deduped by `message_id`.
 * - A resync frame fails exactly the tasks it names (their replies were evicted); a task it does not name
 *   is never taken for lost, even when `recovery_complete` is false (3.1, 7).
 * - It never sends a `callback` block (1.6).
 * - Every wait and timestamp is on its clock (`options.clock`), the system's by default.
 *
 * The task and the subscription are the statecharts `machines/client/client-task.ts` and
 * `machines/client/client-subscription.ts`; task.ts and session-link.ts run them against fetch.
 */
import type { ClientSubscriptionSnapshot } from '../../machines/client/client-subscription.js';
import type { Clock } from './clock.js';
import { dispatch } from './dispatch.js';
import { withDefaults, type FormAClientOptions, type FormASettings } from './form-a-options.js';
import { SessionLink } from './session-link.js';
import { newTask, type TaskHandle } from './task.js';

export class FormAClient {
  private readonly options: FormASettings;
  private readonly links = new Map<string, SessionLink>();
  /** Each session's newest terminal reply id, kept after its stream closes (rule 3 closes the stream, not the session). */
  private readonly cursors = new Map<string, string>();

  constructor(options: FormAClientOptions) {
    this.options = withDefaults(options);
  }

  /** The clock its waits and timestamps are on. */
  get clock(): Clock {
    return this.options.clock;
  }

  /** Sends `text` as a new task of the session (a fresh `task_id` unless given: the same again is the same task). */
  send(sessionId: string, text: string, extra: { readonly task_id?: string; readonly system_prelude?: string } = {}): TaskHandle {
    const link = this.linkOf(sessionId);
    const { task, handle } = newTask(sessionId, extra.task_id ?? crypto.randomUUID(), this.options.clock.now());
    link.tasks.set(handle.task_id, task);
    void dispatch(link, task, text, extra.system_prelude, this.options);
    return handle;
  }

  /**
   * Opens the session's stream and keeps it open until the function returned is called, whatever its
   * tasks (3.1 rule 4: a recording owns its `insights:` subscription for its lifetime; a chat that shows
   * its connection holds its session's). Resolves once the stream is open.
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

  private linkOf(sessionId: string): SessionLink {
    const existing = this.links.get(sessionId);
    if (existing !== undefined && !existing.closed) return existing;
    const link: SessionLink = new SessionLink(sessionId, this.options, this.cursor(sessionId), () => {
      const { cursor } = link.snapshot.context;
      if (cursor !== undefined) this.cursors.set(sessionId, cursor);
      if (this.links.get(sessionId) === link) this.links.delete(sessionId);
    });
    this.links.set(sessionId, link);
    return link;
  }
}
