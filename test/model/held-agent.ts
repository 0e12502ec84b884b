/**
 * An agent whose every run the test drives: it keeps each run's reply sink, so that a driver can make the
 * agent speak when the path says, and ends the run when told, or when its session ends or the host closes.
 */
import type { Agent, ReplySink, Turn } from '../../index.js';

export class HeldAgent implements Agent {
  readonly name = 'held';
  private readonly runs = new Map<string, { readonly reply: ReplySink; readonly finish: () => void }>();

  respond(turn: Turn, reply: ReplySink): Promise<void> {
    return new Promise((resolve) => {
      this.runs.set(`${turn.session_id}/${turn.task_id}`, { reply, finish: () => resolve() });
      reply.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }

  /** Whether the agent was handed this task. */
  has(sessionId: string, taskId: string): boolean {
    return this.runs.has(`${sessionId}/${taskId}`);
  }

  /** The task's reply sink (the task must have been handed to the agent). */
  reply(sessionId: string, taskId: string): ReplySink {
    return this.run(sessionId, taskId).reply;
  }

  /** Ends the task's run. */
  finish(sessionId: string, taskId: string): void {
    this.run(sessionId, taskId).finish();
  }

  private run(sessionId: string, taskId: string) {
    const run = this.runs.get(`${sessionId}/${taskId}`);
    if (run === undefined) throw new Error(`the agent was not handed ${sessionId}/${taskId}`);
    return run;
  }
}
