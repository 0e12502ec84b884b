/**
 * Which callback URLs the host may POST to (4.3 rule 6, Part 8): a loopback origin, or exactly an origin
 * the operator allowlisted, so that a malicious incoming event cannot aim POSTs into an internal network.
 * Pure: a verdict depends only on the URL text and the allowlist. An allowlisted host name comes back as a
 * plan to resolve; the connect-time policy (adapters/callback) finishes it with `judgeResolved`.
 *
 * Addresses are judged by what WHATWG URL parses them to, never by their spelling: `http://0xa000001` is
 * `10.0.0.1` and `http://2130706433` is `127.0.0.1` before any rule sees them.
 */
// BlockList and isIP are pure lookups: no socket, no DNS.
import { BlockList, isIP } from 'node:net';

export type AddressClass =
  | 'loopback'
  | 'unspecified'
  | 'private'
  | 'link_local'
  | 'metadata'
  | 'multicast'
  | 'reserved'
  | 'public';

/** Why a callback URL is refused; stable codes an adapter or a log can carry. */
export const CALLBACK_REFUSALS = {
  malformed: 'callback.url is not an absolute URL',
  scheme: 'callback.url must be http or https',
  userinfo: 'callback.url must not carry credentials (user:password@)',
  query_or_fragment: 'callback.url is a base URL: it has no query string or fragment',
  unspecified_address: 'callback.url must not point at the unspecified address (0.0.0.0, ::)',
  not_allowlisted: 'callback.url must be a loopback origin or an origin in the callback allowlist',
  private_address: 'callback.url names a host that resolves to a private, link-local, metadata or reserved address',
} as const;

export type CallbackRefusalReason = keyof typeof CALLBACK_REFUSALS;

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

/** At least one address: a plan with nothing to dial is a refusal or a failed lookup, never an acceptance. */
export type Addresses = readonly [string, ...string[]];

/** What must be dialled: the checked addresses themselves, or an allowlisted name to resolve and judge. */
export type ConnectPlan =
  | { readonly kind: 'pinned'; readonly addresses: Addresses }
  | { readonly kind: 'resolve'; readonly hostname: string };

export type CallbackUrlVerdict =
  | CallbackRefusal
  | { readonly kind: 'accepted'; readonly target: CallbackTarget; readonly connect: ConnectPlan };

/** An accepted URL with the addresses to dial, in order. */
export interface CallbackConnectable {
  readonly kind: 'accepted';
  readonly target: CallbackTarget;
  readonly addresses: Addresses;
}

// `localhost` is loopback by definition (RFC 6761): pinned without asking DNS, which could say otherwise.
const LOCALHOST: Addresses = ['127.0.0.1', '::1'];

/**
 * Judges a callback URL against the allowlist (origins as `parseAllowlist` returns them).
 * Refuses credentials, a query or fragment, the unspecified address even if allowlisted, and any origin
 * that is neither loopback nor allowlisted. An allowlisted IP-literal origin is accepted whatever its class.
 */
export function checkCallbackUrl(text: string, allowlist: readonly string[]): CallbackUrlVerdict {
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
    if (found !== 'loopback' && !allowsAddress(allowlist, url.protocol, ip, url.port)) {
      return refuse('not_allowlisted', `${url.origin} is not in the callback allowlist (${ip} is ${DESCRIPTIONS[found]})`);
    }
    return { kind: 'accepted', target, connect: { kind: 'pinned', addresses: [dialAddress(ip)] } };
  }
  if (url.hostname === 'localhost') return { kind: 'accepted', target, connect: { kind: 'pinned', addresses: LOCALHOST } };
  if (!allowlist.includes(url.origin)) {
    return refuse('not_allowlisted', `${url.origin} is neither loopback nor in the callback allowlist`);
  }
  return { kind: 'accepted', target, connect: { kind: 'resolve', hostname: url.hostname } };
}

/**
 * Judges every address an allowlisted name resolved to; one bad address refuses the whole URL, since the
 * connection could land on any of them. Loopback and public addresses pass; unspecified never does; any
 * other address passes only if its own origin (same scheme and port) is allowlisted.
 */
export function judgeResolved(
  target: CallbackTarget,
  hostname: string,
  addresses: Addresses,
  allowlist: readonly string[],
): CallbackConnectable | CallbackRefusal {
  const { protocol, port } = new URL(target.origin);
  for (const address of addresses) {
    const found = classifyAddress(address);
    if (found === 'unspecified') {
      return refuse('unspecified_address', `${hostname} resolves to ${address}, the unspecified address`);
    }
    if (found !== 'loopback' && found !== 'public' && !allowsAddress(allowlist, protocol, address, port)) {
      return refuse('private_address', `${hostname} resolves to ${address}, ${DESCRIPTIONS[found]} the allowlist does not name`);
    }
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

/**
 * The class of an IP address (v4 or v6; throws on anything else). IPv6 forms that carry an IPv4 address
 * (mapped, compatible, NAT64, 6to4, SIIT) are judged by the IPv4 address they carry.
 */
export function classifyAddress(ip: string): AddressClass {
  const family = isIP(ip);
  if (family === 4) return classifyIPv4(ip);
  if (family !== 6) throw new TypeError('not an IP address');
  const address = ip.replace(/%.*$/, '');
  const words = ipv6Words(address);
  const carried = carriedIPv4(words);
  if (carried !== undefined) {
    const found = classifyIPv4(carried.ipv4);
    // A translator's 127.0.0.1 is the translator itself: an internal host, not ours.
    return carried.via === 'translator' && found === 'loopback' ? 'private' : found;
  }
  return classifyIPv6(address);
}

/**
 * The address to open a socket to. An IPv4-mapped or -compatible IPv6 address *is* the IPv4 address it
 * was judged as, so that is what is dialled (`::7f00:1` must reach 127.0.0.1, not an IPv6 route).
 */
export function dialAddress(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  const carried = carriedIPv4(ipv6Words(ip.replace(/%.*$/, '')));
  return carried?.via === 'host' ? carried.ipv4 : ip;
}

function refuse(reason: CallbackRefusalReason, message: string): CallbackRefusal {
  return { kind: 'refused', reason, message };
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

const DESCRIPTIONS: Readonly<Record<AddressClass, string>> = {
  loopback: 'a loopback address',
  unspecified: 'the unspecified address',
  private: 'a private address',
  link_local: 'a link-local address',
  metadata: 'a cloud metadata address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
  public: 'a public address',
};

type Ranges = ReadonlyArray<readonly [AddressClass, readonly string[]]>;

// First match wins: the exact metadata addresses come before the ranges that contain them. An IPv4 address
// in none of them is public; an IPv6 address is public only inside global unicast (2000::/3).
const V4_RANGES: Ranges = [
  // AWS/GCP/Azure/OCI instance metadata, AWS ECS and EKS credentials, Alibaba Cloud, Azure WireServer.
  ['metadata', ['169.254.169.254/32', '169.254.170.2/32', '169.254.170.23/32', '100.100.100.200/32', '168.63.129.16/32']],
  // "This network": 0.0.0.0 reaches the local host on Linux; the rest of 0/8 is no destination at all.
  ['unspecified', ['0.0.0.0/8']],
  ['loopback', ['127.0.0.0/8']],
  ['private', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10']],
  ['link_local', ['169.254.0.0/16']],
  ['multicast', ['224.0.0.0/4']],
  // IETF assignments, documentation, benchmarking, the old 6to4 relay, 240/4 and the broadcast address.
  [
    'reserved',
    ['192.0.0.0/24', '192.0.2.0/24', '192.88.99.0/24', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '240.0.0.0/4'],
  ],
];

const V6_RANGES: Ranges = [
  // AWS (metadata, EKS credentials) and GCP metadata over IPv6.
  ['metadata', ['fd00:ec2::254/128', 'fd00:ec2::23/128', 'fd20:ce::254/128']],
  ['unspecified', ['::/128']],
  ['loopback', ['::1/128']],
  // Unique local, the deprecated site-local, and local-use NAT64 (RFC 8215).
  ['private', ['fc00::/7', 'fec0::/10', '64:ff9b:1::/48']],
  ['link_local', ['fe80::/10']],
  ['multicast', ['ff00::/8']],
  // Discard-only, IETF assignments (Teredo, ORCHID...), documentation.
  ['reserved', ['100::/64', '2001::/23', '2001:db8::/32', '3fff::/20']],
  ['public', ['2000::/3']],
];

function blockLists(ranges: Ranges, family: 'ipv4' | 'ipv6'): ReadonlyArray<readonly [AddressClass, BlockList]> {
  return ranges.map(([found, cidrs]) => {
    const list = new BlockList();
    for (const cidr of cidrs) {
      const [network, prefix] = cidr.split('/') as [string, string];
      list.addSubnet(network, Number(prefix), family);
    }
    return [found, list] as const;
  });
}

const V4 = blockLists(V4_RANGES, 'ipv4');
const V6 = blockLists(V6_RANGES, 'ipv6');

function classifyIPv4(ip: string): AddressClass {
  return V4.find(([, list]) => list.check(ip, 'ipv4'))?.[0] ?? 'public';
}

function classifyIPv6(ip: string): AddressClass {
  return V6.find(([, list]) => list.check(ip, 'ipv6'))?.[0] ?? 'reserved';
}

/**
 * The IPv4 address an IPv6 address carries. `host`: mapped (::ffff:a.b.c.d) and compatible (::a.b.c.d)
 * forms, which name that IPv4 host itself. `translator`: NAT64 (64:ff9b::/96), SIIT (::ffff:0:a.b.c.d)
 * and 6to4 (2002:AABB:CCDD::/48), which reach it through a gateway.
 */
function carriedIPv4(words: readonly number[]): { readonly ipv4: string; readonly via: 'host' | 'translator' } | undefined {
  const zeros = (from: number, to: number) => words.slice(from, to).every((word) => word === 0);
  const ipv4 = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  const [w0, w1, w2, , w4, w5, w6, w7] = words as [number, number, number, number, number, number, number, number];
  if (zeros(0, 5) && w5 === 0xffff) return { ipv4: ipv4(w6, w7), via: 'host' };
  // :: and ::1 are themselves, not 0.0.0.0 and 0.0.0.1.
  if (zeros(0, 6) && (w6 !== 0 || w7 > 1)) return { ipv4: ipv4(w6, w7), via: 'host' };
  if (zeros(0, 4) && w4 === 0xffff && w5 === 0) return { ipv4: ipv4(w6, w7), via: 'translator' };
  if (w0 === 0x64 && w1 === 0xff9b && zeros(2, 6)) return { ipv4: ipv4(w6, w7), via: 'translator' };
  if (w0 === 0x2002) return { ipv4: ipv4(w1, w2), via: 'translator' };
  return undefined;
}

/** The eight 16-bit words of an IPv6 address that `isIP` accepted (`::` expanded, a dotted IPv4 tail split). */
function ipv6Words(ip: string): number[] {
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip);
  let text = ip;
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${ip.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const gap = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...gap, ...right].map((word) => parseInt(word, 16));
}
