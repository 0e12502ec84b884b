/**
 * Callback delivery over HTTP (4.3): one POST of a reply to `{url}/tasks/{task_id}`, reported as a
 * CallbackOutcome without judging it. The attempt dials only the addresses its own policy check returned,
 * never follows a redirect, and is bounded as a whole (check, connect, answer, body) by one timeout.
 */
// undici, not node:http: its `connect` hook is the one place a socket opens, so pinning to checked addresses is one function.
import { isIP, connect as connectTcp } from 'node:net';
import { connect as connectTls, createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { Client, type buildConnector } from 'undici';
import { failureCode, type CallbackOutcome, type CallbackRequest, type CallbackTransport } from '../../engine/chat/callback.js';
import { systemClock, type Clock } from '../../engine/core/clock.js';
import type { Addresses, CallbackConnectable } from '../../protocol/callback-url.js';
import { IncomingIgnored, LIMITS, parseRetryAfter } from '../../protocol/index.js';
import type { CallbackPolicy } from './policy.js';
import { peek } from '../http/peek.js';

export interface HttpCallbackTransportOptions {
  readonly policy: CallbackPolicy;
  /** The whole attempt; Part 8's 5 seconds by default. */
  readonly timeoutMs?: number;
  /** How much of an answer is read: enough to recognise the session_ended body, never a flood. */
  readonly maxResponseBytes?: number;
  /** Reads `Retry-After` dates. */
  readonly clock?: Clock;
  /** Certificates (PEM) trusted for https receivers besides Node's bundled roots, e.g. a private CA's. */
  readonly ca?: CaCertificates;
}

export type CaCertificates = string | Buffer | ReadonlyArray<string | Buffer>;

export function httpCallbackTransport(options: HttpCallbackTransportOptions): CallbackTransport {
  const { policy, timeoutMs = LIMITS.callbackTimeoutMs, maxResponseBytes = 64 * 1024, clock = systemClock } = options;
  // TLS's `ca` replaces the default roots: added to them instead, so public receivers stay trusted too.
  // One context for every attempt: building it parses every root certificate.
  const secureContext =
    options.ca === undefined
      ? undefined
      : createSecureContext({ ca: [...rootCertificates, ...(Array.isArray(options.ca) ? options.ca : [options.ca])] });
  return {
    async post(request) {
      if (request.signal.aborted) return { kind: 'aborted' };
      // Ends at the deadline or when the host closes, whichever comes first; `request.signal` tells which.
      // (Not AbortSignal.any: on Node 20 it can keep every attempt's signal alive as long as the host's.)
      const ended = new AbortController();
      const end = () => ended.abort();
      const timer = clock.setTimeout(end, timeoutMs);
      request.signal.addEventListener('abort', end, { once: true });
      try {
        const check = await untilAborted(policy.check(request.url), ended.signal);
        if (check.kind === 'refused') return { kind: 'refused', reason: check.reason };
        if (check.kind === 'unresolved') return { kind: 'connection_failed', code: check.code };
        // The resolver's own name for a lookup that ran out of time (c-ares's, as node:dns reports it).
        if (check.kind === 'lookup_timeout') return { kind: 'connection_failed', code: 'ETIMEOUT' };
        return await send(check, request, { signal: ended.signal, maxResponseBytes, clock, secureContext });
      } catch (error) {
        if (request.signal.aborted) return { kind: 'aborted' };
        if (ended.signal.aborted) return { kind: 'timeout' };
        return { kind: 'connection_failed', code: failureCode(error) };
      } finally {
        clock.clearTimeout(timer);
        request.signal.removeEventListener('abort', end);
      }
    },
  };
}

interface Attempt {
  readonly signal: AbortSignal;
  readonly maxResponseBytes: number;
  readonly clock: Clock;
  /** Undefined: Node's default roots. */
  readonly secureContext: SecureContext | undefined;
}

async function send(check: CallbackConnectable, request: CallbackRequest, attempt: Attempt): Promise<CallbackOutcome> {
  const { signal, maxResponseBytes, clock } = attempt;
  // A client per attempt: its one connection goes to this check's addresses, and nothing is pooled across checks.
  const client = new Client(check.target.origin, { connect: pinnedConnector(check.addresses, attempt) });
  try {
    const response = await client.request({
      method: 'POST',
      path: `${check.target.basePath}/tasks/${encodeURIComponent(request.task_id)}`,
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${request.token}`,
        'user-agent': 'assistant-relay',
      },
      body: request.body,
      signal,
    });
    const body = await peek(response.body, maxResponseBytes);
    const retryAfterMs = parseRetryAfter(response.headers['retry-after'], clock.now());
    return {
      kind: 'answered',
      status: response.statusCode,
      sessionEnded: isSessionEnded(body),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  } finally {
    await client.destroy();
  }
}

/**
 * Opens the connection to the checked addresses only, in order, moving on when one fails to connect. TLS
 * still sends the URL's name as SNI and verifies the certificate against it (and the attempt's CAs). A
 * socket still connecting when the attempt ends is destroyed, so an unreachable receiver cannot hold the
 * process open.
 */
function pinnedConnector(addresses: Addresses, { signal, secureContext }: Attempt): buildConnector.connector {
  return ({ hostname, protocol, port }, callback) => {
    const tls = protocol === 'https:';
    const attempt = ([address, ...rest]: Addresses): void => {
      const to = { host: address, port: Number(port) || (tls ? 443 : 80) };
      // SNI carries names only; for an IP-literal URL the certificate is checked against the address.
      const socket = tls
        ? connectTls({
            ...to,
            ALPNProtocols: ['http/1.1'],
            ...(isIP(hostname) ? {} : { servername: hostname }),
            ...(secureContext ? { secureContext } : {}),
          })
        : connectTcp(to);
      const settle = () => {
        signal.removeEventListener('abort', abandon);
        socket.off(tls ? 'secureConnect' : 'connect', connected).off('error', failed);
      };
      const abandon = () => socket.destroy(Object.assign(new Error('callback attempt ended'), { code: 'ABORT_ERR' }));
      const connected = () => {
        settle();
        callback(null, socket.setNoDelay(true));
      };
      const failed = (error: Error) => {
        settle();
        const [next, ...later] = rest;
        if (next !== undefined && !signal.aborted) attempt([next, ...later]);
        else callback(error, null);
      };
      signal.addEventListener('abort', abandon, { once: true });
      socket.once(tls ? 'secureConnect' : 'connect', connected).once('error', failed);
    };
    attempt(addresses);
  };
}

/** `{ok: true, ignored: true, reason: "session_ended"}` with those literal values (4.2, rules for POST /v1/incoming). */
function isSessionEnded(text: string | undefined): boolean {
  if (text === undefined) return false;
  try {
    return IncomingIgnored.safeParse(JSON.parse(text)).success;
  } catch {
    return false;
  }
}

/** `promise`, or a rejection as soon as `signal` aborts: a slow lookup must not outlive the attempt. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
