/**
 * Answers Node's http server gives before fastify sees a request: headers or a whole request that did
 * not arrive within its time limit (408), headers over Node's 16 KiB (431), oversized chunk extensions
 * (413), and bytes the HTTP parser refuses (400). Node (and fastify's default handler) would write their
 * own bodies; we write ours on the raw socket, then close the connection.
 */
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { HTTP_ERRORS, errorBody } from '../../protocol/index.js';
import type { Failure } from './errors.js';

const CLIENT_FAILURES: Record<string, Failure> = {
  ERR_HTTP_REQUEST_TIMEOUT: { code: 'request_timeout' },
  HPE_HEADER_OVERFLOW: { code: 'headers_too_large' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { code: 'body_too_large' },
};

const NOT_HTTP: Failure = { code: 'invalid_request', message: 'the request is not valid HTTP/1.1' };

function response({ code, message }: Failure): string {
  const status = HTTP_ERRORS[code].status;
  const body = JSON.stringify(errorBody(code, message));
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
    `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
  );
}

/** fastify's `clientErrorHandler`: Node's 'clientError' event of the http server. */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  // Node's own rule: answer only while no response has begun on this connection, or the answer would corrupt it.
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (socket.writable && inFlight?.headersSent !== true) {
    socket.end(response(CLIENT_FAILURES[error.code ?? ''] ?? NOT_HTTP), () => socket.destroy());
  } else {
    socket.destroy();
  }
}
