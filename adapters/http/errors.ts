/**
 * One place that turns every failure into `{ "error": { "code", "message" } }` with a code from the
 * protocol catalogue: schema failures, fastify's own parser and router errors, requests that arrive
 * while the host closes, a shared store that cannot be reached (503 `store_unavailable`, with
 * `Retry-After`), and anything unexpected (a 500 that is logged, never a crash).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';
import { HTTP_ERRORS, errorBody, isHttpErrorCode, type HttpErrorCode } from '../../protocol/index.js';
import { HostClosingError } from '../../engine/chat/engine.js';
import { EventLogError } from '../../storage/errors.js';
import { answerBeforeBody } from './unread-body.js';
import { SchemaError } from './validation.js';

/** What a client is told: a catalogue code, and a message where the catalogue's own says too little. */
export interface Failure {
  readonly code: HttpErrorCode;
  readonly message?: string;
  readonly headers?: Record<string, string>;
}

/** How soon a client may try again once the store could not be reached: the pool's next connection attempt. */
const STORE_RETRY_AFTER_S = '1';

/** A failure the edge finds outside a schema (a body in another charset, say). */
export class EdgeError extends Error {
  override readonly name = 'EdgeError';
  constructor(readonly failure: Failure) {
    super(failure.message ?? HTTP_ERRORS[failure.code].message);
  }
}

export function sendError(reply: FastifyReply, code: HttpErrorCode, message?: string, headers: Record<string, string> = {}) {
  return reply.code(HTTP_ERRORS[code].status).headers(headers).send(errorBody(code, message));
}

// fastify's own messages quote the URL back; ours do not.
const MALFORMED_URL: Failure = { code: 'invalid_request', message: 'the request URL is malformed' };

const FRAMEWORK_FAILURES: Record<string, Failure> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'unsupported_media_type' },
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'body_too_large' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'invalid_json' },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'invalid_json' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'invalid_request' },
  FST_ERR_BAD_URL: MALFORMED_URL,
  // A path parameter longer than any valid session_id (see maxParamLength in server.ts).
  FST_ERR_MAX_PARAM_LENGTH: MALFORMED_URL,
};

/** The code the failed schema's first issue names, or `invalid_request` with zod's account of everything wrong. */
function schemaFailure(error: SchemaError, request: FastifyRequest): Failure {
  const named = error.zodError.issues[0]?.message;
  if (named !== undefined && isHttpErrorCode(named)) return { code: named };
  // fastify hands a validator `null` for a body that was never sent: describe what was sent.
  const unsent = error.part === 'body' && request.body === undefined ? error.schema.safeParse(undefined).error : undefined;
  return { code: 'invalid_request', message: z.prettifyError(unsent ?? error.zodError) };
}

function failureOf(error: FastifyError, request: FastifyRequest): Failure {
  if (error instanceof EdgeError) return error.failure;
  if (error instanceof SchemaError) return schemaFailure(error, request);
  if (error instanceof HostClosingError) return { code: error.code };
  if (error instanceof EventLogError && error.code === 'event_log_unreachable')
    return { code: 'store_unavailable', headers: { 'retry-after': STORE_RETRY_AFTER_S } };
  const known = FRAMEWORK_FAILURES[error.code];
  if (known !== undefined) return known;
  if (error instanceof SyntaxError) return { code: 'invalid_json' };
  const status = error.statusCode ?? 500;
  if (status === 413) return { code: 'body_too_large' };
  if (status === 415) return { code: 'unsupported_media_type' };
  return { code: status >= 400 && status < 500 ? 'invalid_request' : 'internal_error' };
}

/** The one error path: fastify's error handler and its `frameworkErrors` hook both answer through it. */
export function answerError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const { code, message, headers } = failureOf(error, request);
  if (code === 'internal_error') request.log.error({ err: error }, 'request failed');
  else if (code === 'store_unavailable') request.log.warn({ err: error }, 'the store cannot be reached');
  // Refused before its body has all arrived (too large, say): the client reads the answer while it sends the rest.
  if (!request.raw.complete)
    return answerBeforeBody(request, reply, HTTP_ERRORS[code].status, JSON.stringify(errorBody(code, message)), headers ?? {});
  return sendError(reply, code, message, headers);
}

export const errorsPlugin = fp(
  async (app) => {
    app.setErrorHandler(answerError);
    app.setNotFoundHandler((_request, reply) => sendError(reply, 'not_found'));
    // fastify's own 503 while closing carries its body, not ours: answer it here (fastify adds `Connection: close`).
    let closing = false;
    app.addHook('preClose', (done) => {
      closing = true;
      done();
    });
    app.addHook('onRequest', (_request, reply, done) => {
      if (closing) void sendError(reply, 'shutting_down');
      else done();
    });
  },
  { name: 'assistant-relay-errors' },
);
