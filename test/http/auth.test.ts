/** Bearer authentication (5): the same token on `/v1/incoming`, `/v1/events` and `/v1/sessions`; none on `/healthz`. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTP_ERRORS } from '../../protocol/index.js';
import { countEvents } from '../support/log.js';
import { Relay, TOKEN, rawRequest, stopAll } from './fixture.js';

const credentials: Array<[string, Record<string, string>]> = [
  ['no Authorization header', {}],
  ['a wrong token', { authorization: 'Bearer not-the-token' }],
  ['the token with a trailing character', { authorization: `Bearer ${TOKEN}x` }],
  ['a token prefix', { authorization: `Bearer ${TOKEN.slice(0, -1)}` }],
  ['an empty bearer token', { authorization: 'Bearer ' }],
  ['the token without a scheme', { authorization: TOKEN }],
  ['the token as Basic credentials', { authorization: `Basic ${Buffer.from(`user:${TOKEN}`).toString('base64')}` }],
];

const routes: Array<[string, string, string | undefined]> = [
  // The incoming body is malformed on purpose: authentication comes before the body is read.
  ['POST /v1/incoming', '/v1/incoming', '{"session_id":'],
  ['GET /v1/events', '/v1/events?session_id=s1', undefined],
  ['GET /v1/sessions/:id', '/v1/sessions/s1', undefined],
];

describe('authentication', () => {
  let relay: Relay;
  beforeAll(async () => {
    relay = await Relay.start();
  });
  afterAll(stopAll);

  describe.each(routes)('%s', (_name, path, body) => {
    it.each(credentials)('%s: 401 with the error body and WWW-Authenticate, nothing logged', async (_what, headers) => {
      const before = countEvents(relay.db);
      const response = await rawRequest(`${relay.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body }),
      });
      expect(response.status).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="assistant-relay"');
      expect(JSON.parse(response.text)).toEqual({ error: { code: 'unauthorized', message: HTTP_ERRORS.unauthorized.message } });
      expect(countEvents(relay.db)).toBe(before);
    });
  });

  it('lets the right token through on both Form A routes', async () => {
    const stream = await relay.subscribe('s1');
    const accepted = await relay.post({ session_id: 's1', task_id: 't1', text: 'hi' });
    expect(accepted.status).toBe(202);
    await stream.untilReplies(1);
  });

  it.each(['bearer', 'BEARER', 'BeArEr'])('takes the scheme case-insensitively (%s)', async (scheme) => {
    const response = await rawRequest(`${relay.url}/v1/sessions/never-seen`, {
      method: 'GET',
      headers: { authorization: `${scheme} ${TOKEN}` },
    });
    expect(response.status).toBe(404);
    expect(JSON.parse(response.text).error.code).toBe('session_not_found');
  });

  it('answers /healthz without a token', async () => {
    const response = await rawRequest(`${relay.url}/healthz`, { method: 'GET' });
    expect(response.status).toBe(200);
    expect(JSON.parse(response.text)).toEqual({ ok: true, epoch: relay.epoch });
  });
});
