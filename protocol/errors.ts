/**
 * The one catalogue of every code a client or an operator can see, each defined here once: HTTP errors
 * (`{error: {code, message}}`, the closing host's `shutting_down` among them), the `error_code` values of
 * `errored` replies the host produces, the codes of failed reasoning jobs, the reasons a callback URL is
 * refused, the event log's errors, and the provider registry's refusals.
 * A message here is what is said when the place that raises the code has nothing more specific to add.
 * PROTOCOL.md lists the same tables, and test/protocol/errors.test.ts holds the two to each other and
 * to the code that raises them: add a code here first.
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
  store_unavailable: { status: 503, message: "the backend's store cannot be reached, or is behind; nothing was changed, try again" },
  invalid_job_id: { status: 400, message: 'job_id must be a UUID' },
  invalid_stream_cursor: { status: 400, message: 'Last-Event-ID must be the id of a job frame: a positive integer' },
  invalid_payload: {
    status: 400,
    message: "the payload does not follow its purpose's payload schema (or, for a BYO job, is not a BYO envelope)",
  },
  plugin_refused: { status: 403, message: 'this plugin is refused: see the refusal its heartbeat was answered with' },
  invalid_integration_id: { status: 400, message: 'the integration id must be a UUID' },
  invalid_response_schema: { status: 400, message: 'response_schema must be a JSON Schema (draft 2020-12)' },
  unsupported_response_schema: {
    status: 400,
    message:
      'response_schema is beyond what this relay checks: a pattern RE2 does not run, a recursive or non-local $ref, or over the bounds on size, depth, members and patterns',
  },
  payload_too_large: { status: 413, message: "the job's payload is larger than this backend takes" },
  result_too_large: { status: 413, message: "the job's result is larger than this backend takes" },
  job_not_found: { status: 404, message: 'no such job for this integration' },
  job_conflict: { status: 409, message: 'a job with this job_id exists with other content' },
  job_settled: { status: 409, message: 'the job has ended already' },
  result_conflict: { status: 409, message: 'the job was completed with another result' },
  result_invalid: { status: 422, message: "the result does not follow the job's response_schema" },
  result_check_too_costly: {
    status: 422,
    message: "checking the result against the job's response_schema took longer than this backend gives one check; the job stays open",
  },
  too_many_result_checks: {
    status: 429,
    message: 'this integration has a costly result check under way, or the backend has the most it takes; try again after Retry-After',
  },
  integration_not_found: { status: 404, message: 'no such integration' },
  integration_revoked: { status: 409, message: 'the integration is revoked: its tokens cannot be rotated' },
  provider_refused: { status: 422, message: 'the provider cannot be used for an integration' },
  invalid_pairing_id: { status: 400, message: 'the pairing id must be a UUID' },
  pairing_not_found: { status: 404, message: 'no such pairing (or no open pairing with this handle)' },
  pairing_out_of_order: { status: 409, message: 'the pairing is not at the step this message belongs to' },
  pairing_conflict: { status: 409, message: 'this step of the pairing was taken with another message' },
  pairing_ended: { status: 410, message: 'the pairing has ended: completed, aborted or expired' },
  too_many_pairings: { status: 429, message: 'this source, or the backend, holds the most open pairings it may; try again later' },
  too_many_attempts: { status: 429, message: 'too many pairing codes from this source that name no pairing; try again later' },
  too_many_pairing_starts: { status: 429, message: 'this source started the most pairings it may in a while; try again later' },
  pairing_ticket_required: { status: 403, message: 'this backend pairs only with a ticket from its operator: start the pairing with one' },
  pairing_ticket_invalid: { status: 403, message: 'the pairing ticket is unknown, used already or expired' },
  too_many_tickets: { status: 429, message: 'the backend holds the most unused pairing tickets it may; try again later' },
  rekey_not_found: { status: 404, message: 'no such key rotation for this integration (a newer one replaces an unanswered one)' },
  rekey_conflict: { status: 409, message: 'this key rotation was asked or answered with other content' },
  too_many_open_jobs: { status: 429, message: 'this integration has the most open jobs it may have; try again when one has ended' },
  too_many_followers: {
    status: 429,
    message: 'this integration follows the most jobs at once it may on this node; try again when a follower has left',
  },
  too_many_node_followers: { status: 429, message: 'this backend node holds the most job followers it takes; try again when one has left' },
  too_many_status_changes: {
    status: 429,
    message: 'what this heartbeat says of the plugin changed too soon after the last change was logged; send it again after Retry-After',
  },
  rekey_pending: {
    status: 429,
    message: 'a key rotation asked for earlier waits for the assistant; a new one may replace it after Retry-After',
  },
  too_many_rekeys: {
    status: 429,
    message: 'this integration asked for the most key rotations it may in an hour; try again after Retry-After',
  },
  too_many_jobs: { status: 429, message: 'this integration created the most jobs it may in a minute; try again after Retry-After' },
  too_many_stream_opens: {
    status: 429,
    message: 'this integration opened the most job streams it may in a minute on this node; reconnect after Retry-After',
  },
  byo_required: { status: 400, message: 'the integration was created by pairing: it takes only BYO (sealed) jobs' },
  invalid_deadline: {
    status: 400,
    message: "a BYO job needs deadline_at, and a deadline_at must lie after the backend's clock and at most 1 h and 60 s past it",
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type HttpErrorCode = keyof typeof HTTP_ERRORS;

/**
 * A zod check's options that name the catalogue code a failure of it is answered with: request parts
 * other than the body say, in their schema, both what is valid and what a failure is called.
 */
export function fails(code: HttpErrorCode): { readonly error: HttpErrorCode } {
  return { error: code };
}

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
  /** Only the `script` test agent says this one. */
  invalid_script: "the turn's script is malformed",
} as const;

export type ReplyErrorCode = keyof typeof REPLY_ERRORS;

/**
 * The `error.code` of a failed reasoning job (PROTOCOL.md 6b): what a plugin posts as its failure report
 * when its reasoner could not give a result that follows the job's `response_schema`.
 */
export const JOB_ERRORS = {
  reasoner_error: 'the reasoner failed while answering',
  reasoner_unavailable: 'the reasoner could not be reached or started',
  reasoner_refused: 'the model declined to answer',
  deadline_exceeded: "the job's deadline passed before the reasoner answered",
  interrupted: 'the assistant stopped while the reasoner was answering',
  invalid_result: "the reasoner's answer is not a JSON object that follows the job's response_schema",
  invalid_payload: "the job's payload does not follow its purpose's payload schema",
  invalid_response_schema: "the job's response_schema is not a JSON Schema the assistant can check results against",
  unsupported_response_schema:
    "the job's response_schema is beyond what the assistant checks: a pattern RE2 does not run, a recursive or non-local $ref, or over the bounds",
  unsupported_version: "the job's schema_version or envelope_version is outside the versions the plugin handles",
  invalid_job: 'the job envelope does not follow the ReasoningJob schema',
  byo_unsupported: 'the plugin holds no BYO keys: it was not paired',
  envelope_invalid:
    "the job's BYO envelope does not open: tampered, sealed under another pairing's key or for another job, or the job's fields were rewritten",
  byo_required: 'the plugin was paired: it takes only BYO (sealed) jobs, and this one is plain',
} as const;

export type JobErrorCode = keyof typeof JOB_ERRORS;

/**
 * Why our client library (and `assistant-relay job`) refuses what the backend says of a job (PROTOCOL.md
 * 8): raised on the client's side, never sent; each a `JobCheckError` whose message starts with the code.
 */
export const CLIENT_ERRORS = {
  view_mismatch:
    "the backend's view is not of the job asked for or created: another job_id, integration, purpose, byo, deadline or creation time",
  byo_downgrade:
    'a job created sealed (every job of a client holding keys) is shown as plain: byo false, or a result that is not a BYO envelope',
  result_forged: "the job's result does not open under the pairing's keys and the job as created: tampered, or sealed for another job",
  result_nonconforming: "the job's result, opened, does not follow its response_schema",
  keys_required: "the job is BYO: its result opens only with the pairing's keys",
} as const;

export type ClientErrorCode = keyof typeof CLIENT_ERRORS;

/** Why a callback URL is refused (PROTOCOL.md 3b.8): on `POST /v1/incoming` as `callback_not_allowed`, at connect time in `delivery.abandoned`. */
export const CALLBACK_REFUSALS = {
  malformed: 'callback.url is not an absolute URL',
  scheme: 'callback.url must be http or https',
  userinfo: 'callback.url must not carry credentials (user:password@)',
  query_or_fragment: 'callback.url is a base URL: it has no query string or fragment',
  unspecified_address:
    'callback.url must not point at the unspecified address (0.0.0.0, ::, in any spelling, or a name resolving to one), even if allowlisted',
  not_allowlisted: 'callback.url must be a loopback origin or an origin in the callback allowlist',
  private_address:
    'callback.url names an allowlisted host that resolves to a private, link-local, metadata or reserved address whose own origin is not allowlisted',
  loopback_off:
    'callback.url is a loopback address, and this host allows no loopback callbacks (--callback-loopback off): only allowlisted origins',
  loopback_port: 'callback.url is a loopback address on a port outside --callback-loopback-ports',
} as const;

export type CallbackRefusalReason = keyof typeof CALLBACK_REFUSALS;

/** The event log's errors (PROTOCOL.md 4b), for operators and supervisors: each error of storage/ carries its code. */
export const LOG_ERRORS = {
  event_log_locked: 'the event log is open already, in another process or this one; the message names the holder',
  event_log_schema_mismatch: 'the file is not an assistant-relay event log, or has another schema version',
  event_log_permissions: 'the event log, its -wal or its -shm can be accessed by group or others; the message says what to chmod',
  event_log_closed: 'an append after the event log was closed',
  event_log_write_failed: 'the event log could not commit a batch; the host must restart (the CLI exits 70)',
  event_log_unreachable:
    "the backend's PostgreSQL log cannot be reached, or has more decisions waiting than it may; requests are answered 503 store_unavailable until it is back",
  event_log_fenced:
    "an append as a partition's owner after its lease was lost (expired, taken over or released): nothing was appended; the node stops acting as the owner",
  event_log_partition_exists: 'an append would create a partition that exists already: nothing was appended',
} as const;

export type LogErrorCode = keyof typeof LOG_ERRORS;

/**
 * Why a provider, a plugin or a job is refused (PROTOCOL.md 6c), as a `{code, message}`: in a heartbeat
 * answer's `refused`, as a failed job's error, or wherever a `provider_kind` is used.
 */
export const PROVIDER_ERRORS = {
  unknown_provider: 'no provider in the registry has this provider_kind',
  provider_coming_soon: 'this provider is coming soon: it cannot be used yet',
  unsupported_version: 'the schema_version or envelope_version is outside what the other side handles',
} as const;

export type ProviderErrorCode = keyof typeof PROVIDER_ERRORS;
