/**
 * What can be asked of a session, in either form, and what an answer can be. The Form A decider
 * (task-session-decider.ts) and the Form B one (conversation-decider.ts) take the same commands, so the engine
 * routes a command by the session's form alone.
 */
import { REPLY_ERRORS, type CallbackBlock, type ErroredReply, type IncomingEvent, type ReplyBody } from '../../protocol/index.js';
import type { EndReason, Form, SessionOpened, UserMessage } from './events.js';

export type SessionCommand =
  /** `generation` is needed (and drawn by the caller) only when the session does not exist yet. */
  | { readonly type: 'incoming'; readonly event: IncomingEvent; readonly generation?: string; readonly at: number }
  /** The agent says something about a task (Form A) or in the conversation (Form B; `task_id` is the path handle). */
  | {
      readonly type: 'reply';
      readonly session_id: string;
      readonly task_id: string;
      readonly reply: ReplyBody;
      readonly epoch: string;
      readonly at: number;
    }
  /** The agent's run for a user message ended; `failed`: it threw rather than returned. */
  | {
      readonly type: 'finish';
      readonly session_id: string;
      readonly task_id: string;
      readonly failed: boolean;
      readonly epoch: string;
      readonly at: number;
    }
  | { readonly type: 'end'; readonly session_id: string; readonly reason: EndReason; readonly epoch: string; readonly at: number }
  | { readonly type: 'expire'; readonly session_id: string; readonly idleTtlMs: number; readonly epoch: string; readonly at: number }
  | { readonly type: 'interrupt'; readonly session_id: string; readonly epoch: string; readonly at: number };

export type Outcome =
  | 'accepted'
  | 'duplicate'
  | 'session_ended'
  /** Form B: the session has no callback yet and this message advertised none. */
  | 'callback_required'
  | 'progressed'
  | 'settled'
  /** Form B: the reply is in the outbox. */
  | 'queued'
  | 'dropped'
  | 'ended'
  | 'unchanged';

/** The session a command is about. */
export function commandSession(command: SessionCommand): string {
  return command.type === 'incoming' ? command.event.session_id : command.session_id;
}

/** An `errored` reply the host itself puts where the agent's answer would have been. */
export function hostError(session_id: string, task_id: string, code: keyof typeof REPLY_ERRORS): ErroredReply {
  return { session_id, task_id, status: 'errored', error_code: code, error_message: REPLY_ERRORS[code] };
}

/** How an accepted user message finds its session: new (opened in `form`), or with its latest callback. */
export type Arriving = { readonly opens: Form } | { readonly latest: CallbackBlock | undefined; readonly form: Form };

/**
 * An accepted user message, in either form: the session's opening if it is new (with the generation the
 * caller drew), and the message's own fields, which each form logs as its own event type. A callback the
 * session already has as its latest is not logged again: Form A notes `same_callback`, Form B nothing
 * (its replies go to the latest callback anyway).
 */
export function arrival(
  command: Extract<SessionCommand, { type: 'incoming' }>,
  arriving: Arriving,
): { readonly opened: SessionOpened | undefined; readonly message: UserMessage } {
  const { event, at } = command;
  let opened: SessionOpened | undefined;
  if ('opens' in arriving) {
    if (command.generation === undefined) throw new TypeError('opening a session needs a generation');
    opened = { type: 'session.opened', session_id: event.session_id, generation: command.generation, form: arriving.opens, at };
  }
  const { callback } = event;
  const latest = 'latest' in arriving ? arriving.latest : undefined;
  const again = callback !== undefined && latest !== undefined && callback.url === latest.url && callback.token === latest.token;
  const form = 'opens' in arriving ? arriving.opens : arriving.form;
  const message: UserMessage = {
    session_id: event.session_id,
    task_id: event.task_id,
    text: event.text,
    ...(event.system_prelude === undefined ? {} : { system_prelude: event.system_prelude }),
    ...(callback === undefined ? {} : again ? (form === 'A' ? { same_callback: true as const } : {}) : { callback }),
    at,
  };
  return { opened, message };
}
