/**
 * Agent runs: the agent is called once per user message, after the message is committed, and everything
 * it says goes through a reply sink that turns it into commands. A run's end is a command too (Form A: a
 * task still pending then settles `agent_error`; Form B: the turn is logged finished). Each session's runs
 * share one abort signal, aborted when the session ends or the host closes.
 */
import { setMaxListeners } from 'node:events';
import { ReplyBody, isInsightsSession } from '../../protocol/index.js';
import type { Outcome } from '../../machines/chat/commands.js';
import type { DomainEvent } from '../../machines/chat/events.js';
import { memoryBefore, type MemoryEntry } from '../../machines/chat/memory.js';
import type { Window } from '../../machines/core/window.js';
import type { AfterCommitHandler } from '../core/after-commit.js';
import type { Agent, ReplySink, Turn } from './agent.js';
import type { Clock, IdSource } from '../core/clock.js';
import type { CommandPort } from './command-port.js';
import { inBackground } from '../core/failures.js';
import type { ChatProjection } from './projection.js';

export interface AgentRunSettings {
  readonly agent: Agent;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly onAgentError: (error: unknown, turn: Turn) => void;
}

export class AgentRuns implements AfterCommitHandler<DomainEvent> {
  readonly name = 'agent runs';
  /** One abort signal per session with runs. */
  private readonly signals = new Map<string, AbortController>();

  constructor(
    private readonly projection: ChatProjection,
    private readonly commands: CommandPort,
    private readonly settings: AgentRunSettings,
  ) {}

  event(event: DomainEvent): void {
    if (event.type === 'task.started' || event.type === 'message.received') this.start(event.session_id, event.task_id, event.text);
    else if (event.type === 'session.ended') this.abort(event.session_id);
  }

  /** The host is closing: every run is told to stop. */
  abortAll(): void {
    for (const sessionId of [...this.signals.keys()]) this.abort(sessionId);
  }

  /** A reply for a task (or, Form B, for the conversation at that path handle); resolves with what became of it once logged. */
  reply(sessionId: string, taskId: string, reply: ReplyBody): Promise<Outcome> {
    const { clock } = this.settings;
    return this.commands.run({ type: 'reply', session_id: sessionId, task_id: taskId, reply, epoch: this.commands.epoch, at: clock.now() });
  }

  private abort(sessionId: string): void {
    this.signals.get(sessionId)?.abort();
    this.signals.delete(sessionId);
  }

  private start(sessionId: string, taskId: string, text: string): void {
    const context = this.projection.context(sessionId);
    if (this.commands.closing || context === undefined) return;
    let controller = this.signals.get(sessionId);
    if (controller === undefined) {
      this.signals.set(sessionId, (controller = new AbortController()));
      // Every pending task of the session may listen to it: many at once is normal, not a leak.
      setMaxListeners(0, controller.signal);
    }
    const window: Window<MemoryEntry> = context.memory;
    let memory: readonly MemoryEntry[] | undefined;
    const turn: Turn = {
      session_id: sessionId,
      task_id: taskId,
      text,
      system_prelude: context.prelude,
      // Built on first read, from this fold's window (later pushes never change it): it copies up to
      // the memory bound, and many agents never look.
      get memory() {
        return (memory ??= memoryBefore(window, taskId));
      },
      insights: isInsightsSession(sessionId),
    };
    const { signal } = controller;
    Promise.resolve()
      .then(() => this.settings.agent.respond(turn, this.sink(turn, signal)))
      .then(
        () => this.finish(turn, false),
        (error: unknown) => {
          if (!signal.aborted) this.settings.onAgentError(error, turn);
          this.finish(turn, true);
        },
      );
  }

  /**
   * Form A: a run that ends with its task still pending settles it `agent_error`, so no task is left
   * pending forever. Form B: the end of the run is logged, and a failed run shows an error.
   */
  private finish(turn: Turn, failed: boolean): void {
    if (this.commands.closing) return;
    const session = this.projection.taskSession(turn.session_id);
    // The common case, an answered task, needs no decision at all.
    if (session !== undefined && !session.context.pending.has(turn.task_id)) return;
    const { session_id, task_id } = turn;
    const command = { type: 'finish', session_id, task_id, failed, epoch: this.commands.epoch, at: this.settings.clock.now() } as const;
    inBackground(this.commands.run(command), this.commands.report, { what: 'end of an agent run', session_id });
  }

  private sink(turn: Turn, signal: AbortSignal): ReplySink {
    const { session_id, task_id } = turn;
    // Agents are code we do not control: their replies are validated like any other input.
    const validate = (body: Record<string, unknown>) => ReplyBody.parse({ session_id, task_id, ...body });
    const send = async (body: Record<string, unknown>): Promise<void> => {
      await this.reply(session_id, task_id, validate(body));
    };
    // Progress is live-only: the agent need not wait for its commit, so it shares a batch (and a socket
    // write) with what the agent says next. Its frame still goes out only once committed.
    const progress = async (body: Record<string, unknown>): Promise<void> => {
      inBackground(this.reply(session_id, task_id, validate(body)), this.commands.report, { what: 'agent progress', session_id });
    };
    return {
      signal,
      typing: (label) => progress({ status: 'typing', label }),
      toolCall: (label) => progress({ status: 'tool_call', label }),
      message: (text, options) =>
        send({ status: 'message', message_id: options?.message_id ?? this.settings.ids.uuid(), reply_text: text }),
      completed: () => send({ status: 'completed' }),
      silent: () => send({ status: 'silent' }),
      errored: (code, message) => send({ status: 'errored', error_code: code, error_message: message }),
      endSession: async () => {
        await this.commands.run({ type: 'end', session_id, reason: 'agent', epoch: this.commands.epoch, at: this.settings.clock.now() });
      },
    };
  }
}
