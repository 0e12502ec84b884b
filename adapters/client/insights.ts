/**
 * A call's live insights (4.4), from the client's side. A recording owns its `insights:<call>` session's
 * stream for its whole life (3.1 rule 4), sends the `system_prelude` (the situation, the playbook, the
 * one-sentence contract) once, with the first transcript line, and sends each line after it as a task.
 * Replies go to the recording's own store, an `@xstate/store` the Insights tab subscribes to, and never
 * into a chat; `none` and `silent` mean nothing worth showing and are dropped. Browser-safe.
 */
import { createStore } from '@xstate/store';
import type { FormAClient } from './form-a.js';

export interface Insight {
  readonly task_id: string;
  readonly text: string;
  readonly at: number;
}

/** What the Insights tab shows. */
export interface InsightsContext {
  readonly insights: readonly Insight[];
  /** Lines sent whose answer has not come yet. */
  readonly pending: number;
  readonly recording: boolean;
}

function insightsStore() {
  return createStore({
    context: { insights: [], pending: 0, recording: true } as InsightsContext,
    on: {
      sent: (context) => ({ ...context, pending: context.pending + 1 }),
      answered: (context, event: { insight?: Insight }) => ({
        ...context,
        pending: context.pending - 1,
        insights: event.insight === undefined ? context.insights : [...context.insights, event.insight],
      }),
      stopped: (context) => ({ ...context, recording: false }),
    },
  });
}

export type InsightsStore = ReturnType<typeof insightsStore>;

export class InsightsRecording {
  readonly store: InsightsStore = insightsStore();
  readonly sessionId: string;
  private preludeSent = false;
  private readonly answers = new Set<Promise<void>>();

  private constructor(
    private readonly client: FormAClient,
    callSession: string,
    private readonly systemPrelude: string | undefined,
    private readonly release: () => void,
  ) {
    this.sessionId = `insights:${callSession}`;
  }

  /** Starts recording a call: its `insights:` stream is open (and stays so) when this resolves. */
  static async start(client: FormAClient, callSession: string, systemPrelude?: string): Promise<InsightsRecording> {
    const release = await client.hold(`insights:${callSession}`);
    return new InsightsRecording(client, callSession, systemPrelude, release);
  }

  /** One line of the transcript, as it is said. */
  line(text: string): void {
    if (!this.store.getSnapshot().context.recording) throw new Error('the recording has stopped');
    const prelude = this.preludeSent || this.systemPrelude === undefined ? {} : { system_prelude: this.systemPrelude };
    this.preludeSent = true;
    const task = this.client.send(this.sessionId, text, prelude);
    this.store.trigger.sent();
    const answered = task.reply.then(
      (reply) => {
        const text = reply.status === 'message' ? reply.reply_text.trim() : '';
        const worth = text !== '' && text.toLowerCase().replace(/[.!]$/, '') !== 'none';
        this.store.trigger.answered(worth ? { insight: { task_id: task.task_id, text, at: this.client.clock.now() } } : {});
      },
      () => this.store.trigger.answered({}),
    );
    const tracked = answered.finally(() => this.answers.delete(tracked));
    this.answers.add(tracked);
  }

  /** Ends the recording once the lines sent have their answers; the stream is let go. */
  async stop(): Promise<void> {
    this.store.trigger.stopped();
    await Promise.all(this.answers);
    this.release();
  }
}
