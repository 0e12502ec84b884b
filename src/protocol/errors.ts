/**
 * The one catalogue of error codes a client can see: HTTP errors (`{error: {code, message}}`) and the
 * `error_code` values of `errored` replies. PROTOCOL.md lists the same table; add a code here first.
 */
export const HTTP_ERRORS = {
  invalid_json: { status: 400, message: 'the request body is not valid JSON' },
  invalid_request: { status: 400, message: 'the request body does not match the incoming event schema' },
  missing_session_id: { status: 400, message: 'the session_id query parameter is required' },
  invalid_session_id: { status: 400, message: 'session_id must be 1 to 256 characters with no control characters' },
  invalid_last_event_id: { status: 400, message: 'Last-Event-ID must be {epoch}:{generation}:{seq}' },
  invalid_task_id: { status: 400, message: 'in a Form B conversation task_id must be a UUID' },
  callback_not_allowed: { status: 400, message: 'callback.url is not a loopback origin or an origin in the callback allowlist' },
  callback_lookup_timeout: { status: 400, message: 'the host name of callback.url did not resolve in time; try again' },
  callback_required: { status: 400, message: 'the first message of a Form B conversation must carry a callback block' },
  unauthorized: { status: 401, message: 'a valid Authorization: Bearer token is required' },
  not_found: { status: 404, message: 'no such route' },
  session_not_found: { status: 404, message: 'no such session' },
  body_too_large: { status: 413, message: 'the request body is larger than the host accepts' },
  unsupported_media_type: { status: 415, message: 'the request body must be application/json' },
  request_timeout: { status: 408, message: 'the request did not arrive in full within the time limit' },
  stream_not_available: { status: 409, message: 'this session is a Form B conversation: its replies go to its callback, not to a stream' },
  too_many_readers: { status: 429, message: 'this session already has the maximum number of live readers' },
  headers_too_large: { status: 431, message: 'the request headers are larger than the host accepts' },
  internal_error: { status: 500, message: 'the host failed to handle the request' },
  shutting_down: { status: 503, message: 'the host is shutting down' },
  too_many_streams: { status: 503, message: 'the host already serves the maximum number of streams' },
} as const satisfies Record<string, { status: number; message: string }>;

export type HttpErrorCode = keyof typeof HTTP_ERRORS;

export function isHttpErrorCode(text: string): text is HttpErrorCode {
  return Object.hasOwn(HTTP_ERRORS, text);
}

export function errorBody(code: HttpErrorCode, message: string = HTTP_ERRORS[code].message) {
  return { error: { code, message } };
}

/** `error_code` values of `errored` replies that the host itself produces. */
export const REPLY_ERRORS = {
  reply_too_large: 'the reply exceeded 256 KiB and was replaced',
  interrupted: 'the assistant restarted while this task was pending',
  agent_error: 'the agent failed while handling this task',
  session_ended: 'the session ended while this task was pending',
} as const;

export type ReplyErrorCode = keyof typeof REPLY_ERRORS;
