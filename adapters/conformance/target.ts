/**
 * The one place the kit sends traffic: the implementation under test, at the origin it was given. A URL
 * of any other origin is refused before a socket opens, and a redirect is never followed (it is an
 * answer to check, not a place to go), so a wrong or hostile implementation cannot steer the kit elsewhere.
 */
import { parsedOrUndefined } from './arrivals.js';

export class Target {
  readonly origin: string;

  constructor(
    /** The implementation's base URL (`http://127.0.0.1:8787`): paths are resolved under it. */
    readonly base: URL,
    /** Each request's time, besides the check's own. */
    private readonly requestTimeoutMs: number,
  ) {
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new TypeError(`${base.href} is not an http(s) URL`);
    this.origin = base.origin;
  }

  /** `path` under the base URL; refused unless it stays at the target's origin. */
  url(path: string): URL {
    const url = new URL(path.replace(/^\//, ''), this.base.href.endsWith('/') ? this.base : new URL(`${this.base.href}/`));
    if (url.origin !== this.origin) throw new TypeError(`${url.href} is not at ${this.origin}: the kit sends nothing there`);
    return url;
  }

  /** A request to `path`, answered or aborted by `signal` or the request's own time (a stream's body is the caller's to read). */
  fetch(path: string, init: RequestInit & { readonly signal: AbortSignal; readonly stream?: boolean }): Promise<Response> {
    const { stream, ...rest } = init;
    // A stream stays open for as long as its check reads it; any other answer has the request's time.
    const signal = stream === true ? init.signal : AbortSignal.any([init.signal, AbortSignal.timeout(this.requestTimeoutMs)]);
    return fetch(this.url(path), { ...rest, redirect: 'manual', signal });
  }

  /** A JSON request: its status and its body (parsed when it is JSON). */
  async json(
    path: string,
    init: { readonly method?: string; readonly headers?: Record<string, string>; readonly body?: unknown; readonly signal: AbortSignal },
  ): Promise<{ status: number; headers: Headers; body: unknown; text: string }> {
    const response = await this.fetch(path, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
      ...(init.body === undefined ? {} : { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
      signal: init.signal,
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: parsedOrUndefined(text), text };
  }
}
