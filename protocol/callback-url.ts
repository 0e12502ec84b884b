/**
 * Which callback URLs the host may POST to (4.3 rule 6, Part 8): a loopback origin (on the ports the
 * operator allows), or exactly an origin the operator allowlisted, so that a malicious incoming event
 * cannot aim POSTs into an internal network. Pure: a verdict depends only on the URL text, the allowlist
 * and the loopback ports. An allowlisted host name comes back as a plan to resolve; the connect-time policy
 * (adapters/callback) finishes it with `judgeResolved`.
 *
 * Addresses are judged by what WHATWG URL parses them to, never by their spelling: `http://0xa000001` is
 * `10.0.0.1` and `http://2130706433` is `127.0.0.1` before any rule sees them; ./ip-address says what
 * kind of address that is.
 */
// isIP is a pure check: no socket, no DNS.
import { isIP } from 'node:net';
import { ADDRESS_CLASSES, classifyAddress, dialAddress } from './ip-address.js';
import { CALLBACK_REFUSALS, type CallbackRefusalReason } from './errors.js';
import { formatPortRanges, inPortRanges, type PortRange } from './port-ranges.js';

export interface CallbackRefusal {
  readonly kind: 'refused';
  readonly reason: CallbackRefusalReason;
  /** Names the origin or address, never the whole URL (it may carry credentials). */
  readonly message: string;
}

/** Where replies go: `{origin}{basePath}/tasks/{task_id}`. */
export interface CallbackTarget {
  /** `scheme://host[:port]` as WHATWG serializes it. */
  readonly origin: string;
  /** The URL's path without its trailing slash: `''` for a bare origin. */
  readonly basePath: string;
}

/**
 * Which loopback callbacks need no allowlist entry: on any port (`'any'`, the default, as the spec's
 * reference plugins do), on these ports only, or none at all (`[]`).
 */
export type LoopbackPorts = 'any' | readonly PortRange[];

/** At least one address: a plan with nothing to dial is a refusal or a failed lookup, never an acceptance. */
export type Addresses = readonly [string, ...string[]];

/** What must be dialled: the checked addresses themselves, or an allowlisted name to resolve and judge. */
export type ConnectPlan =
  { readonly kind: 'pinned'; readonly addresses: Addresses } | { readonly kind: 'resolve'; readonly hostname: string };

export type CallbackUrlVerdict =
  CallbackRefusal | { readonly kind: 'accepted'; readonly target: CallbackTarget; readonly connect: ConnectPlan };

/** An accepted URL with the addresses to dial, in order. */
export interface CallbackConnectable {
  readonly kind: 'accepted';
  readonly target: CallbackTarget;
  readonly addresses: Addresses;
}

// `localhost` is loopback by definition (RFC 6761): pinned without asking DNS, which could say otherwise.
const LOCALHOST: Addresses = ['127.0.0.1', '::1'];

/**
 * Judges a callback URL against the allowlist (origins as `parseAllowlist` returns them) and the loopback
 * ports. Refuses credentials, a query or fragment, the unspecified address even if allowlisted, a loopback
 * origin on a port `loopback` does not allow, and any other origin that is not allowlisted. An allowlisted
 * origin is accepted whatever its class: the operator named it exactly.
 */
export function checkCallbackUrl(text: string, allowlist: readonly string[], loopback: LoopbackPorts = 'any'): CallbackUrlVerdict {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return refuse('malformed', CALLBACK_REFUSALS.malformed);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return refuse('scheme', `callback.url must be http or https, not ${url.protocol.slice(0, -1)}`);
  }
  if (url.username !== '' || url.password !== '') return refuse('userinfo', CALLBACK_REFUSALS.userinfo);
  if (hasQueryOrFragment(url)) return refuse('query_or_fragment', CALLBACK_REFUSALS.query_or_fragment);

  const target: CallbackTarget = { origin: url.origin, basePath: url.pathname.replace(/\/$/, '') };
  const ip = unbracket(url.hostname);
  if (isIP(ip) !== 0) {
    const found = classifyAddress(ip);
    if (found === 'unspecified') return refuse('unspecified_address', `${url.origin} is the unspecified address`);
    if (!allowsAddress(allowlist, url.protocol, ip, url.port)) {
      if (found !== 'loopback') {
        return refuse('not_allowlisted', `${url.origin} is not in the callback allowlist (${ip} is ${ADDRESS_CLASSES[found]})`);
      }
      const refusal = refuseLoopback(loopback, portOf(url), `${url.origin} is a loopback address`);
      if (refusal !== undefined) return refusal;
    }
    return { kind: 'accepted', target, connect: { kind: 'pinned', addresses: [dialAddress(ip)] } };
  }
  if (url.hostname === 'localhost') {
    const refusal = allowlist.includes(url.origin)
      ? undefined
      : refuseLoopback(loopback, portOf(url), `${url.origin} is a loopback address`);
    return refusal ?? { kind: 'accepted', target, connect: { kind: 'pinned', addresses: LOCALHOST } };
  }
  if (!allowlist.includes(url.origin)) {
    return refuse('not_allowlisted', `${url.origin} is neither loopback nor in the callback allowlist`);
  }
  return { kind: 'accepted', target, connect: { kind: 'resolve', hostname: url.hostname } };
}

/**
 * Judges every address an allowlisted name resolved to; one bad address refuses the whole URL, since the
 * connection could land on any of them. Public addresses pass; loopback ones on the ports `loopback`
 * allows; unspecified never does; any other address passes only if its own origin (same scheme and port)
 * is allowlisted.
 */
export function judgeResolved(
  target: CallbackTarget,
  hostname: string,
  addresses: Addresses,
  allowlist: readonly string[],
  loopback: LoopbackPorts = 'any',
): CallbackConnectable | CallbackRefusal {
  const url = new URL(target.origin);
  for (const address of addresses) {
    const found = classifyAddress(address);
    if (found === 'unspecified') {
      return refuse('unspecified_address', `${hostname} resolves to ${address}, the unspecified address`);
    }
    if (found === 'public' || allowsAddress(allowlist, url.protocol, address, url.port)) continue;
    if (found !== 'loopback') {
      return refuse('private_address', `${hostname} resolves to ${address}, ${ADDRESS_CLASSES[found]} the allowlist does not name`);
    }
    const refusal = refuseLoopback(loopback, portOf(url), `${hostname} resolves to ${address}, a loopback address`);
    if (refusal !== undefined) return refusal;
  }
  const [first, ...rest] = addresses;
  return { kind: 'accepted', target, addresses: [dialAddress(first), ...rest.map(dialAddress)] };
}

/** Parses `--callback-allowlist ORIGIN[,ORIGIN…]` into normalized origins; throws on a bad entry. */
export function parseAllowlist(text: string): string[] {
  if (text.trim() === '') return [];
  return text.split(',').map((entry) => parseAllowedOrigin(entry.trim()));
}

/**
 * One allowlist entry: an http(s) origin, normalized (`https://Example.com:443` is `https://example.com`;
 * `http://[::ffff:a00:1]` is `http://10.0.0.1`, the address it dials).
 */
export function parseAllowedOrigin(entry: string): string {
  const bad = (why: string) => new Error(`callback allowlist entry "${entry}" ${why}`);
  if (entry === '') throw new Error('the callback allowlist has an empty entry (a stray comma?)');
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    throw bad('is not an origin such as https://hooks.example.com');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad('must be an http or https origin');
  // Not echoed: the entry itself would put the credentials in the error.
  if (url.username !== '' || url.password !== '') throw new Error('a callback allowlist entry carries credentials (user:password@)');
  if (url.pathname !== '/' || hasQueryOrFragment(url)) throw bad('must be an origin alone, without a path, query or fragment');
  const ip = unbracket(url.hostname);
  if (isIP(ip) === 0) return url.origin;
  if (classifyAddress(ip) === 'unspecified') throw bad('is the unspecified address, never a callback origin');
  return originOf(url.protocol, dialAddress(ip), url.port);
}

function refuse(reason: CallbackRefusalReason, message: string): CallbackRefusal {
  return { kind: 'refused', reason, message };
}

/** The refusal of a loopback address on `port` that no allowlist entry names, if `loopback` does not allow it. */
function refuseLoopback(loopback: LoopbackPorts, port: number, subject: string): CallbackRefusal | undefined {
  if (loopback === 'any' || inPortRanges(loopback, port)) return undefined;
  if (loopback.length === 0)
    return refuse('loopback_off', `${subject}, and this host allows no loopback callbacks (only allowlisted origins)`);
  return refuse(
    'loopback_port',
    `${subject} on port ${port}, and this host allows loopback callbacks on ports ${formatPortRanges(loopback)} only`,
  );
}

/** The port a URL connects to: its own, or its scheme's default (WHATWG leaves `port` empty then). */
function portOf(url: URL): number {
  return url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
}

// WHATWG keeps an empty `?` or `#` in href but not in `search`/`hash`; a base URL has neither.
function hasQueryOrFragment(url: URL): boolean {
  return url.href.includes('?') || url.href.includes('#');
}

function unbracket(hostname: string): string {
  return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
}

/** Whether the operator allowlisted this address itself (same scheme and port), as the address it dials. */
function allowsAddress(allowlist: readonly string[], protocol: string, address: string, port: string): boolean {
  return allowlist.includes(originOf(protocol, dialAddress(address), port));
}

function originOf(protocol: string, address: string, port: string): string {
  const host = isIP(address) === 6 ? `[${address.replace(/%.*$/, '')}]` : address;
  return new URL(`${protocol}//${host}${port === '' ? '' : `:${port}`}`).origin;
}
