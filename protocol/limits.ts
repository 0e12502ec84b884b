/** Numbers the protocol fixes (Part 8). Deployment knobs default to these; the spec's floors are never lowered. */
export const LIMITS = {
  /** A reply body (compact JSON, UTF-8) larger than this is replaced by an `errored`/`reply_too_large` reply. */
  replyMaxBytes: 256 * 1024,
  /** Retained backlog per session: at least this many terminal replies... */
  backlogMinReplies: 64,
  /** ...or this many bytes of them, whichever runs out first. */
  backlogMinBytes: 1024 * 1024,
  /** `: keep-alive` comment while a stream is idle. */
  keepaliveMs: 20_000,
  /** A subscriber with more than this many bytes of frames queued is disconnected (it resumes from its cursor). */
  readerMaxQueuedBytes: 1024 * 1024,
  /** Evicted task ids kept for exact reconciliation (our choice; the spec says "bounded"). */
  ledgerMaxTasks: 1024,
  /** A retried `task_id` is recognised as a duplicate among the session's newest this many (our choice; see PROTOCOL.md). */
  taskIdWindow: 1024,
  /** Concurrent readers of one session's stream (our choice; the spec leaves it open). */
  maxReadersPerSession: 4,
  /** Request body cap for `POST /v1/incoming` (our choice). */
  incomingMaxBytes: 1024 * 1024,
  /** Identifier lengths (our choice; see PROTOCOL.md). */
  sessionIdMaxLength: 256,
  taskIdMaxLength: 128,
  /** Callback delivery (4.3, 8): attempts in all, per-attempt timeout, and the first backoff (it doubles). */
  callbackAttempts: 4,
  callbackTimeoutMs: 5_000,
  callbackBackoffMs: 250,
  /** A receiver's `Retry-After` is honoured up to this (our choice): one slow receiver cannot park a session's outbox for long. */
  callbackRetryAfterMaxMs: 10_000,
  /** An Insights reply is one sentence of at most this many characters (4.4 rule 3; the cap is our choice). */
  insightsReplyMaxChars: 200,
} as const;
