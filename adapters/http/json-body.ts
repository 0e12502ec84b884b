/**
 * Request bodies are JSON in UTF-8 (RFC 8259 section 8.1) and nothing else. Any other media type is
 * 415, and so is JSON declared in another charset, which the parser would otherwise misread as UTF-8.
 * fastify's own JSON parser (prototype poisoning refused) does the parsing.
 */
import { MIMEType } from 'node:util';
import fp from 'fastify-plugin';
import { EdgeError } from './errors.js';

const NOT_UTF8 = { code: 'unsupported_media_type', message: 'the request body must be application/json in UTF-8' } as const;

/** No charset parameter, or any label of UTF-8 (`utf-8`, `utf8`, in any case), as the Encoding Standard reads labels. */
function declaresUtf8(contentType: string | undefined): boolean {
  // What nearly every client sends: no parse needed (a MIMEType and a TextDecoder per request showed in the profile).
  if (contentType === 'application/json') return true;
  try {
    const charset = new MIMEType(contentType ?? '').params.get('charset');
    return charset === null || new TextDecoder(charset).encoding === 'utf-8';
  } catch {
    return false;
  }
}

export const jsonBodyPlugin = fp(
  async (app) => {
    const parseJson = app.getDefaultJsonParser('error', 'error');
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body: string, done) => {
      if (!declaresUtf8(request.headers['content-type'])) done(new EdgeError(NOT_UTF8), undefined);
      // fastify's default parser answers through done; its type also allows one that returns a promise.
      else void parseJson(request, body, done);
    });
  },
  { name: 'assistant-relay-json-body' },
);
