/**
 * The port an assistant host plugs its agent into. The engine calls `respond` once per task, after the
 * task is durably logged; everything the agent says goes through the sink, which resolves once the reply
 * is in the log (and so on its way to the client).
 */
import type { MemoryEntry } from '../../machines/chat/task-session.js';

export type { MemoryEntry };

export interface Turn {
  readonly session_id: string;
  readonly task_id: string;
  /** The user's message, plain text. */
  readonly text: string;
  /** Standing context sent once on the session (Insights sessions), if any. */
  readonly system_prelude: string | undefined;
  /** Earlier turns of this session, oldest first (bounded; see README). */
  readonly memory: readonly MemoryEntry[];
  /** True on `insights:` sessions: reply with one short sentence, `none`, or stay silent. */
  readonly insights: boolean;
}

export interface ReplySink {
  /** Live-only progress; the task stays pending. Resolves once queued for the log, not committed. */
  typing(label: string): Promise<void>;
  toolCall(label: string): Promise<void>;
  /** The answer. The first terminal reply settles the task; later ones are dropped (and logged as dropped). */
  message(text: string, options?: { readonly message_id?: string }): Promise<void>;
  completed(): Promise<void>;
  silent(): Promise<void>;
  errored(code: string, message: string): Promise<void>;
  /** Ends the session: pending tasks settle `errored`/`session_ended`, streams close after what was sent. */
  endSession(): Promise<void>;
  /** Aborted when the session ends or the host closes; the agent should stop. */
  readonly signal: AbortSignal;
}

export interface Agent {
  readonly name: string;
  /**
   * Handles one task. The promise is the run: resolve it when the agent is done with the turn. If it
   * settles while the task is still pending, the task is settled `errored`/`agent_error`.
   */
  respond(turn: Turn, reply: ReplySink): Promise<void>;
}
