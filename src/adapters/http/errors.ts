/**
 * One place that turns every failure into `{ "error": { "code", "message" } }` with a code from the
 * protocol catalogue: fastify's own parser errors, unknown routes, and anything unexpected (a 500 that
 * is logged, never a crash).
 */
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import { HTTP_ERRORS, errorBody, type HttpErrorCode } from '../../protocol/index.js';
import { HostClosingError } from '../../engine/engine.js';

export function sendError(reply: FastifyReply, code: HttpErrorCode, message?: string, headers: Record<string, string> = {}) {
  return reply.code(HTTP_ERRORS[code].status).headers(headers).send(errorBody(code, message));
}

const FRAMEWORK_CODES: Record<string, HttpErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_BODY_TOO_LARGE: 'body_too_large',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_ERR_BAD_URL: 'invalid_request',
};

function codeOf(error: FastifyError): HttpErrorCode {
  if (error instanceof HostClosingError) return 'shutting_down';
  const known = FRAMEWORK_CODES[error.code];
  if (known !== undefined) return known;
  if (error instanceof SyntaxError) return 'invalid_json';
  const status = error.statusCode ?? 500;
  if (status === 413) return 'body_too_large';
  if (status === 415) return 'unsupported_media_type';
  return status >= 400 && status < 500 ? 'invalid_request' : 'internal_error';
}

export const errorsPlugin = fp(
  async (app: FastifyInstance) => {
    app.setErrorHandler((error: FastifyError, request, reply) => {
      const code = codeOf(error);
      if (code === 'internal_error') request.log.error({ err: error }, 'request failed');
      return sendError(reply, code);
    });
    app.setNotFoundHandler((_request, reply) => sendError(reply, 'not_found'));
  },
  { name: 'assistant-relay-errors' },
);
