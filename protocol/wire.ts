/** Zod schemas of every wire body and frame of the chat channel, Form A (2.5, 2.7, 2.9, 4.2, 7). */
import { z } from 'zod';
import { fails, type HttpErrorCode } from './errors.js';
import { isSessionId, isTaskId, parseEventId } from './ids.js';

export const SessionId = z.string().refine(isSessionId, { message: 'session_id must be 1 to 256 characters with no control characters' });

export const TaskId = z
  .string()
  .refine(isTaskId, { message: 'task_id must be 1 to 128 characters of A-Z a-z 0-9 . _ : -, and not . or ..' });

/** The optional callback block (2.8): replies go to `{url}/tasks/{task_id}` with `Authorization: Bearer {token}`. */
export const CallbackBlock = z.object({
  url: z.string().min(1).max(2048),
  // Sent as a header value: visible ASCII only, so no token can break or smuggle a header.
  token: z
    .string()
    .min(1)
    .max(4096)
    .regex(/^[\x21-\x7e]+$/, { message: 'callback.token must be visible ASCII characters' }),
});
export type CallbackBlock = z.infer<typeof CallbackBlock>;

/** Incoming event (2.9): what the client adds to the conversation. Unknown fields are ignored. */
export const IncomingEvent = z.object({
  session_id: SessionId,
  task_id: TaskId,
  text: z.string(),
  callback: CallbackBlock.optional(),
  system_prelude: z.string().optional(),
});
export type IncomingEvent = z.infer<typeof IncomingEvent>;

/**
 * The request parts other than the body, as the HTTP edge validates them. Each issue's message is the
 * catalogue code the client gets, so one schema says both what is valid and what a failure is called.
 */

/** `GET /v1/events?session_id=…` (4.2): absent or empty is missing; repeated, too long or with control characters, invalid. */
export const EventsQuery = z.object({
  session_id: z
    .string({ error: (issue) => (issue.input === undefined ? 'missing_session_id' : 'invalid_session_id') })
    .min(1, fails('missing_session_id'))
    .refine(isSessionId, fails('invalid_session_id')),
});

/** `Last-Event-ID` (6.2), parsed into its parts. Node joins a repeated header into one value, which does not parse. */
export const EventsHeaders = z.looseObject({
  'last-event-id': z
    .string(fails('invalid_last_event_id'))
    .transform((text, context) => {
      const id = parseEventId(text);
      if (id === undefined) context.issues.push({ code: 'custom', message: 'invalid_last_event_id' satisfies HttpErrorCode, input: text });
      return id ?? z.NEVER;
    })
    .optional(),
});

/** `GET /v1/sessions/{session_id}`. */
export const SessionPath = z.object({ session_id: z.string().refine(isSessionId, fails('invalid_session_id')) });

const Label = z.string().max(200);

const replyBase = {
  session_id: z.string(),
  task_id: z.string(),
  user_message_id: z.string().optional(),
};

/** Reply bodies (2.5), one schema per status: the fields each status carries (Form A table in PROTOCOL.md). */
export const MessageReply = z.object({
  ...replyBase,
  status: z.literal('message'),
  message_id: z.string().min(1),
  reply_text: z.string(),
});
export const CompletedReply = z.object({ ...replyBase, status: z.literal('completed') });
export const SilentReply = z.object({ ...replyBase, status: z.literal('silent') });
export const ErroredReply = z.object({
  ...replyBase,
  status: z.literal('errored'),
  error_code: z.string().min(1),
  error_message: z.string(),
});
export const TypingReply = z.object({ ...replyBase, status: z.literal('typing'), label: Label });
export const ToolCallReply = z.object({ ...replyBase, status: z.literal('tool_call'), label: Label });

export const TerminalReply = z.discriminatedUnion('status', [MessageReply, CompletedReply, SilentReply, ErroredReply]);
export const ProgressReply = z.discriminatedUnion('status', [TypingReply, ToolCallReply]);
export const ReplyBody = z.discriminatedUnion('status', [
  MessageReply,
  CompletedReply,
  SilentReply,
  ErroredReply,
  TypingReply,
  ToolCallReply,
]);

/** A reply as a callback receives it (4.3): the path carries `task_id`, so the body does not. */
export const CallbackReplyBody = z.discriminatedUnion('status', [
  MessageReply.omit({ task_id: true }),
  CompletedReply.omit({ task_id: true }),
  SilentReply.omit({ task_id: true }),
  ErroredReply.omit({ task_id: true }),
  TypingReply.omit({ task_id: true }),
  ToolCallReply.omit({ task_id: true }),
]);
export type CallbackReplyBody = z.infer<typeof CallbackReplyBody>;

export type TerminalReply = z.infer<typeof TerminalReply>;
export type ErroredReply = z.infer<typeof ErroredReply>;
export type ProgressReply = z.infer<typeof ProgressReply>;
export type ReplyBody = z.infer<typeof ReplyBody>;
export type ReplyStatus = ReplyBody['status'];

/** Reconciliation frame (2.7), sent as `event: resync` with no id. */
export const ResyncFrame = z.object({
  type: z.literal('resync'),
  session_id: z.string(),
  missed_task_ids: z.array(z.string()),
  recovery_complete: z.boolean(),
});
export type ResyncFrame = z.infer<typeof ResyncFrame>;

/** `POST /v1/incoming` answers. */
export const IncomingAccepted = z.object({
  ok: z.literal(true),
  session_id: z.string(),
  task_id: z.string(),
  duplicate: z.literal(true).optional(),
});
export type IncomingAccepted = z.infer<typeof IncomingAccepted>;

export const IncomingIgnored = z.object({
  ok: z.literal(true),
  ignored: z.literal(true),
  reason: z.literal('session_ended'),
});
export type IncomingIgnored = z.infer<typeof IncomingIgnored>;

/** Every 4xx/5xx body. */
export const ErrorBody = z.object({
  error: z.object({ code: z.string(), message: z.string() }),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/** Size of a reply as the stream carries it: its compact JSON in UTF-8. The 256 KiB cap applies to this. */
export function replyBytes(json: string): number {
  return Buffer.byteLength(json, 'utf8');
}

/** A reply as POSTed to a callback (4.3): the body without `task_id`, which the URL path carries instead. */
export function callbackBody(reply: ReplyBody): string {
  const { task_id: _carriedByPath, ...body } = reply;
  return JSON.stringify(body);
}
