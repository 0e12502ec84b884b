/**
 * Generated malformed requests: each starts from an endpoint's valid request (its method, path, token,
 * query and body) and bends some of it (another method, a path parameter of any string, a token that is
 * nearly right, a Last-Event-ID of any shape, a content type that is not JSON, a body with a field of the
 * wrong type, cut short, nested past any sense, or not UTF-8 at all). Most of each request stays valid,
 * so that what is bent reaches the code behind authentication and validation.
 */
import fc from 'fast-check';
import type { WireRequest } from './wire.js';

/** An HTTP endpoint to fuzz, with what a valid request to it holds. */
export interface Endpoint {
  readonly name: string;
  readonly method: string;
  /** As the server routes it, e.g. `/v1/sessions/:session_id`. */
  readonly route: string;
  /** A valid value of each path parameter (read when the request is made: some are created during the run). */
  readonly params?: Readonly<Record<string, () => string>>;
  readonly query?: Readonly<Record<string, () => string>>;
  /** The bearer token the route takes, if any. */
  readonly token?: () => string;
  readonly body?: () => unknown;
  /** The route answers with an event stream and takes a `Last-Event-ID`. */
  readonly stream?: true;
  /** The `Host` a valid request names (the inspector checks it). */
  readonly host: () => string;
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

/** Printable ASCII without the characters that end a header or a request line. */
const headerText = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)), maxLength: 60 });

/** Any string, as a path segment: mostly encoded, sometimes raw (spaces, `?`, `#`, non-ASCII). */
const anySegment = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }).map(encodeURIComponent) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }).map((s) => s.replace(/[\r\n]/g, '')) },
  { weight: 1, arbitrary: fc.constantFrom('', '.', '..', '%', '%zz', '%00', '%2F', '%C0%AF', 'a'.repeat(5_000), '%FF%FE', '\u00e9', ' ') },
  { weight: 1, arbitrary: fc.uuid() },
);

function pathOf(endpoint: Endpoint): fc.Arbitrary<string> {
  const names = [...endpoint.route.matchAll(/:(\w+)/g)].map((match) => match[1]!);
  const values = names.map((name) => {
    const valid = endpoint.params?.[name];
    return valid === undefined ? anySegment : fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: anySegment });
  });
  return fc
    .tuple(
      fc.tuple(...values),
      fc.oneof({ weight: 12, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('/', '//', '/x', '.json', '%2e') }),
    )
    .map(([chosen, suffix]) => {
      let i = 0;
      const path = endpoint.route.replace(/:(\w+)/g, (_, name: string) => {
        const value = chosen[i++];
        return value === null || value === undefined ? encodeURIComponent(endpoint.params![name]!()) : value;
      });
      return `${path}${suffix}`;
    });
}

function queryOf(endpoint: Endpoint): fc.Arbitrary<string> {
  const valid = Object.entries(endpoint.query ?? {});
  const pair = fc.tuple(
    fc.oneof(fc.constantFrom(...valid.map(([name]) => name), 'x', '__proto__', 'session_id[]'), headerText),
    anySegment,
  );
  return fc
    .tuple(
      fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      fc.array(
        fc.oneof(
          { weight: 3, arbitrary: pair.map(([name, value]) => `${encodeURIComponent(name)}=${value}`) },
          { weight: 1, arbitrary: anySegment },
        ),
        { maxLength: 3 },
      ),
    )
    .map(([keepValid, extra]) => {
      const parts = [...(keepValid ? valid.map(([name, value]) => `${name}=${encodeURIComponent(value())}`) : []), ...extra];
      return parts.length === 0 ? '' : `?${parts.join('&')}`;
    });
}

function authorizationOf(endpoint: Endpoint): fc.Arbitrary<string | undefined> {
  const token = endpoint.token;
  const wrong = fc.oneof(
    fc.constant(undefined),
    headerText.map((text) => `Bearer ${text}`),
    headerText,
    fc.constantFrom('Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'Bearer a b'),
  );
  if (token === undefined) return fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: wrong });
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant(null).map(() => `Bearer ${token()}`) },
    { weight: 1, arbitrary: fc.constantFrom('bearer', 'BEARER', 'Bearer  ').map((scheme) => `${scheme} ${token()}`) },
    { weight: 1, arbitrary: fc.constant(null).map(() => `Bearer ${token().slice(0, -1)}`) },
    { weight: 2, arbitrary: wrong },
  );
}

const CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json; charset=iso-8859-1',
  'application/json;',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  '*/*',
];

const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: headerText },
);

const lastEventId = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('0', '-1', 'e:g:1', 'abc:def:0', 'abc:def:-1', 'abc:def:1e3', 'abc:def:9007199254740993', ':::', '1', ''),
  fc.tuple(headerText, headerText, fc.integer()).map(([a, b, n]) => `${a}:${b}:${n}`),
  headerText,
  fc.constant('x'.repeat(9_000)),
);

/** A few levels of any JSON. */
const anyJson = fc.jsonValue({ maxDepth: 3 });

function nested(depth: number): unknown {
  let value: unknown = {};
  for (let i = 0; i < depth; i += 1) value = i % 2 === 0 ? { a: value } : [value];
  return value;
}

/** The valid body with one field bent: dropped, retyped, or joined by one more. */
function bent(valid: () => unknown): fc.Arbitrary<unknown> {
  return fc.tuple(fc.nat(), anyJson, fc.oneof(headerText, fc.constantFrom('__proto__', 'constructor'))).map(([pick, value, extra]) => {
    const body = valid();
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return value;
    const copy: Record<string, unknown> = { ...(body as Record<string, unknown>) };
    const keys = Object.keys(copy);
    const key = keys.length === 0 ? undefined : keys[pick % keys.length];
    switch (pick % 3) {
      case 0:
        if (key !== undefined) delete copy[key];
        return copy;
      case 1:
        if (key !== undefined) copy[key] = value;
        return copy;
      default:
        return JSON.parse(
          `${JSON.stringify(copy).slice(0, -1)}${keys.length === 0 ? '' : ','}${JSON.stringify(extra)}:${JSON.stringify(value)}}`,
        );
    }
  });
}

function bodyOf(endpoint: Endpoint): fc.Arbitrary<Buffer | undefined> {
  const valid = endpoint.body;
  const json = (arbitrary: fc.Arbitrary<unknown>) => arbitrary.map((value) => Buffer.from(JSON.stringify(value) ?? 'null'));
  const broken = fc.oneof(
    json(anyJson),
    fc.string({ maxLength: 200 }).map((text) => Buffer.from(text)),
    fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
    fc.constantFrom(
      Buffer.from(''),
      Buffer.from('{'),
      Buffer.from('{"a":'),
      Buffer.from('\ufeff{}'),
      Buffer.from('nul'),
      Buffer.from([0xc3, 0x28]),
    ),
    fc.constant(null).map(() => Buffer.from(JSON.stringify(nested(2_000)))),
    fc.constant(null).map(() => Buffer.from(`"${'a'.repeat(300 * 1024)}"`)),
  );
  if (valid === undefined) return fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: broken });
  return fc.oneof(
    { weight: 3, arbitrary: json(fc.constant(null).map(valid)) },
    { weight: 5, arbitrary: json(bent(valid)) },
    {
      weight: 1,
      arbitrary: fc.nat().map((n) => {
        const text = Buffer.from(JSON.stringify(valid()));
        return text.subarray(0, n % text.length);
      }),
    },
    { weight: 2, arbitrary: broken },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

/** Requests to `endpoint`, each mostly valid and bent somewhere. */
export function requestsTo(endpoint: Endpoint): fc.Arbitrary<WireRequest> {
  const isPost = endpoint.method === 'POST';
  return fc
    .record({
      method: fc.oneof(
        { weight: 10, arbitrary: fc.constant(endpoint.method) },
        { weight: 1, arbitrary: fc.constantFrom(...METHODS) },
        { weight: 1, arbitrary: fc.constantFrom('get', 'BREW', 'M-SEARCH') },
      ),
      path: pathOf(endpoint),
      query: queryOf(endpoint),
      authorization: authorizationOf(endpoint),
      contentType: isPost ? contentType : fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: contentType }),
      lastEventId: endpoint.stream ? lastEventId : fc.constant(undefined),
      host: fc.oneof(
        { weight: 12, arbitrary: fc.constant(null).map(() => endpoint.host()) },
        { weight: 1, arbitrary: fc.constantFrom(undefined, 'evil.example', 'localhost:1', '[::1]', '') },
      ),
      extra: fc.oneof(
        { weight: 20, arbitrary: fc.array(fc.tuple(fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/), headerText), { maxLength: 3 }) },
        // Past Node's 16 KiB of headers.
        { weight: 1, arbitrary: fc.constant([['x-padding', 'x'.repeat(20_000)] as [string, string]]) },
      ),
      body: isPost
        ? bodyOf(endpoint)
        : fc.oneof({ weight: 10, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: bodyOf(endpoint) }),
      chunked: fc.oneof({ weight: 12, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    })
    .map(({ method, path, query, authorization, contentType, lastEventId, host, extra, body, chunked }) => ({
      method,
      target: `${path}${query}`,
      headers: [
        ...(host === undefined ? [] : [['host', host] as const]),
        ...(authorization === undefined ? [] : [['authorization', authorization] as const]),
        ...(contentType === undefined || body === undefined ? [] : [['content-type', contentType] as const]),
        ...(lastEventId === undefined ? [] : [['last-event-id', lastEventId] as const]),
        // Names a server acts on are left to the fields above; these only add noise.
        ...extra.filter(([name]) => !['host', 'content-length', 'transfer-encoding', 'connection', 'expect', 'upgrade'].includes(name)),
      ],
      ...(body === undefined ? {} : { body }),
      chunked,
    }));
}
