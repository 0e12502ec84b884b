/**
 * What kind of place an IP address names (4.3 rule 6): loopback, private, public... ipaddr.js knows the
 * special-purpose ranges; kept here is only what it does not: the cloud metadata addresses, which IPv6
 * forms carry an IPv4 address and how, and that public IPv6 is global unicast (2000::/3) alone.
 */
// isIP is a pure check, no socket, no DNS: the gate for text that a socket would dial as an address, not a name.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type AddressClass = 'loopback' | 'unspecified' | 'private' | 'link_local' | 'metadata' | 'multicast' | 'reserved' | 'public';

/** How a refusal names the class: "10.0.0.1 is a private address". */
export const ADDRESS_CLASSES: Readonly<Record<AddressClass, string>> = {
  loopback: 'a loopback address',
  unspecified: 'the unspecified address',
  private: 'a private address',
  link_local: 'a link-local address',
  metadata: 'a cloud metadata address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
  public: 'a public address',
};

/**
 * The class of an IP address (v4 or v6; throws on anything else). IPv6 forms that carry an IPv4 address
 * (mapped, compatible, NAT64, 6to4, SIIT) are judged by the IPv4 address they carry.
 */
export function classifyAddress(ip: string): AddressClass {
  const address = parse(ip);
  if (address.kind() === 'ipv6') {
    const carried = carriedIPv4(address as ipaddr.IPv6);
    if (carried !== undefined) {
      const found = classOf(carried.ipv4);
      // A translator's 127.0.0.1 is the translator itself: an internal host, not ours.
      return carried.via === 'translator' && found === 'loopback' ? 'private' : found;
    }
  }
  return classOf(address);
}

/**
 * The address to open a socket to. An IPv4-mapped or -compatible IPv6 address *is* the IPv4 address it
 * was judged as, so that is what is dialled (`::7f00:1` must reach 127.0.0.1, not an IPv6 route).
 */
export function dialAddress(ip: string): string {
  const address = parse(ip);
  if (address.kind() === 'ipv4') return ip;
  const carried = carriedIPv4(address as ipaddr.IPv6);
  return carried?.via === 'host' ? carried.ipv4.toString() : ip;
}

/**
 * The source a request counts against for the limits each source has (PROTOCOL.md 7.8): an IPv4 address
 * as it is, an IPv6 form that names an IPv4 host as that host, and any other IPv6 address as its /64
 * (`2001:db8:1:2::/64`): one host is given a whole /64 to pick addresses from. No address (the socket
 * is gone already) is the source `unknown`.
 */
export function sourceOf(ip: string | undefined): string {
  if (ip === undefined || isIP(ip) === 0) return 'unknown';
  // The host an IPv6 form of an IPv4 address names is that address, as it is dialled.
  const host = dialAddress(ip);
  if (isIP(host) === 4) return host;
  const prefix = [...parse(host).toByteArray().slice(0, 8), 0, 0, 0, 0, 0, 0, 0, 0];
  return `${ipaddr.fromByteArray(prefix).toString()}/64`;
}

function parse(ip: string): ipaddr.IPv4 | ipaddr.IPv6 {
  if (isIP(ip) === 0) throw new TypeError('not an IP address');
  return ipaddr.parse(ip);
}

const cidrs = (...texts: string[]) => texts.map((text) => ipaddr.parseCIDR(text));

// Checked before ipaddr.js's ranges, which file these under link-local, carrier-grade NAT, unique local or unicast.
const METADATA = {
  metadata: cidrs(
    // AWS/GCP/Azure/OCI instance metadata, AWS ECS and EKS credentials, Alibaba Cloud, Azure WireServer.
    '169.254.169.254/32',
    '169.254.170.2/32',
    '169.254.170.23/32',
    '100.100.100.200/32',
    '168.63.129.16/32',
    // AWS (metadata, EKS credentials) and GCP metadata over IPv6.
    'fd00:ec2::254/128',
    'fd00:ec2::23/128',
    'fd20:ce::254/128',
  ),
};

// Our class of each ipaddr.js range name; every special-purpose range it knows that is not here (benchmarking,
// documentation, discard, Teredo, AS112...) is `reserved`, so a range a later ipaddr.js adds is never public.
const RANGE_CLASSES: Readonly<Record<string, AddressClass>> = {
  unicast: 'public',
  unspecified: 'unspecified',
  loopback: 'loopback',
  private: 'private',
  carrierGradeNat: 'private',
  uniqueLocal: 'private',
  deprecatedSiteLocal: 'private',
  linkLocal: 'link_local',
  multicast: 'multicast',
};

// Outside it, IPv6 that ipaddr.js calls plain unicast is unassigned address space.
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

function classOf(address: ipaddr.IPv4 | ipaddr.IPv6): AddressClass {
  if (ipaddr.subnetMatch(address, METADATA, 'none') === 'metadata') return 'metadata';
  const range = address.range();
  // Local-use NAT64 (RFC 8215) leads to a network of the operator's own, whatever address it carries.
  if (range === 'rfc6052') return 'private';
  const found = RANGE_CLASSES[range] ?? 'reserved';
  return found === 'public' && address.kind() === 'ipv6' && !address.match(GLOBAL_UNICAST) ? 'reserved' : found;
}

const NAT64 = ipaddr.parseCIDR('64:ff9b::/96');
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/**
 * The IPv4 address an IPv6 address carries. `host`: mapped (::ffff:a.b.c.d) and compatible (::a.b.c.d)
 * forms, which name that IPv4 host itself. `translator`: NAT64 (64:ff9b::/96), SIIT (::ffff:0:a.b.c.d)
 * and 6to4 (2002:AABB:CCDD::/48), which reach it through a gateway.
 */
function carriedIPv4(address: ipaddr.IPv6): { readonly ipv4: ipaddr.IPv4; readonly via: 'host' | 'translator' } | undefined {
  const bytes = address.toByteArray();
  const ipv4 = (from: number) => new ipaddr.IPv4(bytes.slice(from, from + 4));
  switch (address.range()) {
    case 'ipv4Mapped':
      return { ipv4: ipv4(12), via: 'host' };
    case 'rfc6145':
      return { ipv4: ipv4(12), via: 'translator' };
    case '6to4':
      return { ipv4: ipv4(2), via: 'translator' };
    case 'rfc6052':
      return address.match(NAT64) ? { ipv4: ipv4(12), via: 'translator' } : undefined;
    // :: and ::1 are ranges of their own, so never read as 0.0.0.0 and 0.0.0.1.
    case 'unicast':
      return address.match(IPV4_COMPATIBLE) ? { ipv4: ipv4(12), via: 'host' } : undefined;
    default:
      return undefined;
  }
}
