/** Connection time limits and the stream cap of the HTTP edge (PROTOCOL.md 4.3, 3.10). Streams outlive every time limit. */
export interface HttpLimits {
  /** A request's headers must arrive within this, counted from its first byte (from the connection, for the first). */
  readonly headersTimeoutMs: number;
  /** A whole request, body included, must arrive within this. At least `headersTimeoutMs`. */
  readonly requestTimeoutMs: number;
  /** A kept-alive connection with no request in progress is closed after this. */
  readonly connectionIdleTimeoutMs: number;
  /** Open streams (`GET /v1/events`) in the process, all sessions together. */
  readonly maxStreams: number;
}

export const HTTP_LIMITS: HttpLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  connectionIdleTimeoutMs: 5_000,
  maxStreams: 512,
};

/** The given limits over the defaults. Node refuses a headers limit longer than the whole request's: so do we, before anything opens. */
export function httpLimits(given: Partial<HttpLimits>): HttpLimits {
  const limits = { ...HTTP_LIMITS, ...given };
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) throw new RangeError('headersTimeoutMs must not be longer than requestTimeoutMs');
  return limits;
}
