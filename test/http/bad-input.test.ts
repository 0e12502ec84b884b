/**
 * Bad input (issue 2, "What must hold"): each request gets its exact 4xx with `{error: {code, message}}`,
 * never a 5xx, and appends nothing to the log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTP_ERRORS, type HttpErrorCode } from '../../protocol/index.js';
import { countEvents } from '../support/log.js';
import { RawSocket } from '../support/raw-socket.js';
import { Relay, TOKEN, rawRequest, stopAll, type RawResponse } from './fixture.js';

interface Case {
  readonly name: string;
  readonly send: (relay: Relay) => Promise<RawResponse>;
  readonly code: HttpErrorCode;
  /** Defaults to the catalogue's message; zod and router messages are matched on what they name. */
  readonly message?: RegExp;
  /** A HEAD answer carries the status and headers but no body. */
  readonly head?: true;
}

const auth = { authorization: `Bearer ${TOKEN}` };

function postRaw(body: string, contentType?: string) {
  return (relay: Relay) =>
    rawRequest(`${relay.url}/v1/incoming`, {
      method: 'POST',
      headers: { ...auth, ...(contentType === undefined ? {} : { 'content-type': contentType }) },
      body,
    });
}

const postJson = (body: unknown) => postRaw(JSON.stringify(body), 'application/json');
const valid = { session_id: 's1', task_id: 't1', text: 'hello' };

function get(path: string, headers: Record<string, string | string[]> = {}, method = 'GET') {
  return (relay: Relay) => rawRequest(`${relay.url}${path}`, { method, headers: { ...auth, ...headers } });
}

const raw = (bytes: string) => (relay: Relay) => RawSocket.exchange(relay.url, bytes);

const events = (query: string, headers: Record<string, string | string[]> = {}) => get(`/v1/events${query}`, headers);

const cases: Case[] = [
  // POST /v1/incoming: the body
  { name: 'malformed JSON', send: postRaw('{"session_id":', 'application/json'), code: 'invalid_json' },
  { name: 'an empty JSON body', send: postRaw('', 'application/json'), code: 'invalid_json' },
  {
    name: 'a __proto__ key',
    send: postRaw('{"__proto__":{"x":1},"session_id":"s1","task_id":"t1","text":"x"}', 'application/json'),
    code: 'invalid_json',
  },
  { name: 'no body at all', send: postRaw(''), code: 'invalid_request', message: /expected object, received undefined/ },
  { name: 'JSON null', send: postRaw('null', 'application/json'), code: 'invalid_request', message: /expected object, received null/ },
  { name: 'a JSON array', send: postJson([valid]), code: 'invalid_request', message: /expected object, received array/ },
  { name: 'session_id a number', send: postJson({ ...valid, session_id: 5 }), code: 'invalid_request', message: /at session_id/ },
  { name: 'task_id a number', send: postJson({ ...valid, task_id: 7 }), code: 'invalid_request', message: /at task_id/ },
  { name: 'text null', send: postJson({ ...valid, text: null }), code: 'invalid_request', message: /at text/ },
  {
    name: 'system_prelude an object',
    send: postJson({ ...valid, system_prelude: {} }),
    code: 'invalid_request',
    message: /at system_prelude/,
  },
  { name: 'text missing', send: postJson({ session_id: 's1', task_id: 't1' }), code: 'invalid_request', message: /at text/ },
  { name: 'task_id missing', send: postJson({ session_id: 's1', text: 'x' }), code: 'invalid_request', message: /at task_id/ },
  { name: 'session_id missing', send: postJson({ task_id: 't1', text: 'x' }), code: 'invalid_request', message: /at session_id/ },
  { name: 'an empty object', send: postJson({}), code: 'invalid_request', message: /at session_id[\s\S]*at task_id[\s\S]*at text/ },
  { name: 'an empty session_id', send: postJson({ ...valid, session_id: '' }), code: 'invalid_request', message: /at session_id/ },
  {
    name: 'a session_id of 10,000 characters',
    send: postJson({ ...valid, session_id: 'a'.repeat(10_000) }),
    code: 'invalid_request',
    message: /at session_id/,
  },
  {
    name: 'a session_id with a control character',
    send: postJson({ ...valid, session_id: 'a\u0007b' }),
    code: 'invalid_request',
    message: /at session_id/,
  },
  { name: 'a task_id with spaces', send: postJson({ ...valid, task_id: 'my task' }), code: 'invalid_request', message: /at task_id/ },
  // A receiver would normalise /tasks/. and /tasks/.. away: never task ids.
  {
    name: 'a task_id of .',
    send: postJson({ ...valid, task_id: '.' }),
    code: 'invalid_request',
    message: /not \. or \.\.[\s\S]*at task_id/,
  },
  {
    name: 'a task_id of ..',
    send: postJson({ ...valid, task_id: '..' }),
    code: 'invalid_request',
    message: /not \. or \.\.[\s\S]*at task_id/,
  },
  {
    name: 'a task_id of 129 characters',
    send: postJson({ ...valid, task_id: 't'.repeat(129) }),
    code: 'invalid_request',
    message: /at task_id/,
  },
  {
    name: 'a callback to a private address',
    send: postJson({ ...valid, callback: { url: 'http://10.0.0.1/cb', token: 'x' } }),
    code: 'callback_not_allowed',
    message: /10\.0\.0\.1 is a private address/,
  },
  {
    name: 'a callback with credentials in its URL',
    send: postJson({ ...valid, callback: { url: 'http://user:pw@127.0.0.1:9/cb', token: 'x' } }),
    code: 'callback_not_allowed',
    message: /credentials/,
  },
  {
    name: 'a callback token that would break its header',
    send: postJson({ ...valid, callback: { url: 'http://127.0.0.1:9/cb', token: 'a\r\nX-Injected: 1' } }),
    code: 'invalid_request',
    message: /callback\.token/,
  },
  {
    name: 'a callback that is not http',
    send: postJson({ ...valid, callback: { url: 'ftp://127.0.0.1/cb', token: 'x' } }),
    code: 'callback_not_allowed',
    message: /http or https/,
  },
  { name: 'a body over 1 MiB', send: postJson({ ...valid, text: 'x'.repeat(1024 * 1024) }), code: 'body_too_large' },
  { name: 'a text/plain body', send: postRaw(JSON.stringify(valid), 'text/plain'), code: 'unsupported_media_type' },
  { name: 'a body with no content type', send: postRaw(JSON.stringify(valid)), code: 'unsupported_media_type' },
  {
    name: 'a form body',
    send: postRaw('session_id=s1&task_id=t1&text=x', 'application/x-www-form-urlencoded'),
    code: 'unsupported_media_type',
  },
  ...['utf-16', 'UTF-16LE', 'iso-8859-1', '"utf-32"', 'no-such-charset', '""'].map((charset): Case => ({
    name: `JSON declared as charset=${charset}`,
    send: postRaw(JSON.stringify(valid), `application/json; charset=${charset}`),
    code: 'unsupported_media_type',
    message: /^the request body must be application\/json in UTF-8$/,
  })),

  // GET /v1/events: the query and Last-Event-ID
  { name: 'no session_id', send: events(''), code: 'missing_session_id' },
  { name: 'an empty session_id', send: events('?session_id='), code: 'missing_session_id' },
  { name: 'only other parameters', send: events('?session=s1'), code: 'missing_session_id' },
  { name: 'a session_id of 10,000 characters', send: events(`?session_id=${'a'.repeat(10_000)}`), code: 'invalid_session_id' },
  { name: 'a session_id of 257 characters', send: events(`?session_id=${'a'.repeat(257)}`), code: 'invalid_session_id' },
  { name: 'a repeated session_id', send: events('?session_id=s1&session_id=s1'), code: 'invalid_session_id' },
  { name: 'a session_id with a control character', send: events('?session_id=a%01b'), code: 'invalid_session_id' },
  ...[
    'garbage',
    '',
    '1:2',
    'a:b:1:2',
    'a::1',
    'a:b:0',
    'a:b:01',
    'a:b:-1',
    'a:b:1.5',
    'A:b:1',
    `${'a'.repeat(33)}:b:1`,
    'a:b:12345678901234567',
  ].map((id): Case => ({
    name: `Last-Event-ID ${JSON.stringify(id)}`,
    send: events('?session_id=s1', { 'last-event-id': id }),
    code: 'invalid_last_event_id',
  })),
  {
    name: 'two Last-Event-ID headers',
    send: events('?session_id=s1', { 'last-event-id': ['a:b:1', 'a:b:2'] }),
    code: 'invalid_last_event_id',
  },

  // GET /v1/sessions/:session_id
  { name: 'a session path of 257 characters', send: get(`/v1/sessions/${'a'.repeat(257)}`), code: 'invalid_session_id' },
  {
    name: 'a session path of 10,000 characters',
    send: get(`/v1/sessions/${'a'.repeat(10_000)}`),
    code: 'invalid_request',
    message: /^the request URL is malformed$/,
  },
  { name: 'a malformed percent escape', send: get('/v1/sessions/%ZZ'), code: 'invalid_request', message: /^the request URL is malformed$/ },

  // What Node's http server answers itself, before fastify sees a request: our body all the same.
  {
    name: 'headers over 16 KiB',
    send: raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
    code: 'headers_too_large',
  },
  {
    name: 'bytes that are not HTTP',
    send: raw('HELLO THERE\r\n\r\n'),
    code: 'invalid_request',
    message: /^the request is not valid HTTP\/1\.1$/,
  },
  {
    name: 'an HTTP/1.1 request with no Host header',
    send: raw('GET /healthz HTTP/1.1\r\n\r\n'),
    code: 'invalid_request',
    message: /^an HTTP\/1\.1 request needs a Host header$/,
  },
  {
    name: 'a header line with no colon',
    send: raw('GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n'),
    code: 'invalid_request',
    message: /^the request is not valid HTTP\/1\.1$/,
  },
  {
    name: 'a chunk extension over 16 KiB',
    send: raw(
      `POST /v1/incoming HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2;x=${'a'.repeat(20_000)}\r\n{}\r\n0\r\n\r\n`,
    ),
    code: 'body_too_large',
  },

  // Routes and methods that do not exist
  { name: 'an unknown route', send: get('/v2/events?session_id=s1'), code: 'not_found' },
  { name: 'GET /v1/incoming', send: get('/v1/incoming'), code: 'not_found' },
  { name: 'DELETE /v1/events', send: get('/v1/events?session_id=s1', {}, 'DELETE'), code: 'not_found' },
  { name: 'HEAD /v1/events', send: get('/v1/events?session_id=s1', {}, 'HEAD'), code: 'not_found', head: true },
];

describe('bad input', () => {
  let relay: Relay;
  beforeAll(async () => {
    relay = await Relay.start();
  });
  afterAll(stopAll);

  it.each(cases)('$name: $code, nothing logged', async ({ send, code, message, head }) => {
    const before = countEvents(relay.db);
    const response = await send(relay);
    expect(response.status).toBe(HTTP_ERRORS[code].status);
    expect(countEvents(relay.db)).toBe(before);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = head ? undefined : JSON.parse(response.text);
    expect(body).toEqual(
      head ? undefined : { error: { code, message: message ? expect.stringMatching(message) : HTTP_ERRORS[code].message } },
    );
  });

  it('still serves a valid turn afterwards', async () => {
    const stream = await relay.subscribe('s1');
    const accepted = await relay.post(valid);
    expect(accepted.status).toBe(202);
    await stream.untilReplies(1);
    expect(stream.replies[0]!.json).toMatchObject({ session_id: 's1', task_id: 't1', status: 'message', reply_text: 'hello' });
  });
});
