/** Which callback URLs the host may POST to (4.3 rule 6): the URL rules, address classes and the connect-time check. */
import { describe, expect, it } from 'vitest';
import { CallbackPolicy, type CallbackCheck } from '../../adapters/callback/policy.js';
import { checkCallbackUrl, parseAllowlist } from '../../protocol/callback-url.js';
import { classifyAddress, type AddressClass } from '../../protocol/ip-address.js';
import { tableResolver } from '../support/receiver.js';

const ALLOWLIST = [
  'https://hooks.example.com',
  'http://cb.example.test:8080',
  'http://mixed.example.test',
  'http://meta.example.test',
  'http://zero.example.test',
  'http://mapped.example.test',
  'http://loop.example.test',
  'http://down.example.test',
  'http://lan.example.test:8080',
  'http://lan6.example.test:8080',
  // A private address the operator names itself: as a literal origin, and as where lan.example.test lands.
  'http://10.0.0.1:9000',
  'http://192.168.1.10:8080',
];

const DNS = {
  'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'cb.example.test': ['10.0.0.1'],
  'mixed.example.test': ['127.0.0.1', '10.0.0.1'],
  'meta.example.test': ['169.254.169.254'],
  'zero.example.test': ['0.0.0.0'],
  'mapped.example.test': ['::ffff:10.0.0.1'],
  'loop.example.test': ['127.0.0.1', '::1'],
  'lan.example.test': ['192.168.1.10'],
  'lan6.example.test': ['::ffff:192.168.1.10'],
};

type Expected = { refused: string } | { dial: string[] } | { unresolved: string } | { lookup_timeout: string };

function summary(check: CallbackCheck): Expected {
  if (check.kind === 'refused') return { refused: check.reason };
  if (check.kind === 'unresolved') return { unresolved: check.code };
  if (check.kind === 'lookup_timeout') return { lookup_timeout: check.message };
  return { dial: [...check.addresses] };
}

const VERDICTS: Array<[string, Expected]> = [
  // Refused: internal addresses however they are spelled, and everything that is not a plain http(s) base URL.
  ['http://10.0.0.1', { refused: 'not_allowlisted' }],
  ['http://169.254.169.254', { refused: 'not_allowlisted' }],
  ['http://[::ffff:10.0.0.1]', { refused: 'not_allowlisted' }],
  ['http://0xa000001', { refused: 'not_allowlisted' }],
  ['http://012.0.0.1', { refused: 'not_allowlisted' }],
  ['http://[64:ff9b::a00:1]', { refused: 'not_allowlisted' }],
  ['http://[fd00:ec2::254]', { refused: 'not_allowlisted' }],
  ['http://[fe80::1]', { refused: 'not_allowlisted' }],
  ['http://user:pw@127.0.0.1', { refused: 'userinfo' }],
  ['http://user@127.0.0.1:9000', { refused: 'userinfo' }],
  ['ftp://127.0.0.1', { refused: 'scheme' }],
  ['javascript:alert(1)', { refused: 'scheme' }],
  ['http://0.0.0.0', { refused: 'unspecified_address' }],
  ['http://0', { refused: 'unspecified_address' }],
  ['http://[::]:9000', { refused: 'unspecified_address' }],
  ['http://127.0.0.1:9000/cb?x=1', { refused: 'query_or_fragment' }],
  ['http://127.0.0.1:9000/cb#top', { refused: 'query_or_fragment' }],
  ['http://127.0.0.1:9000/cb?', { refused: 'query_or_fragment' }],
  ['/relative/path', { refused: 'malformed' }],
  ['https://evil.example.com', { refused: 'not_allowlisted' }],
  ['http://hooks.example.com', { refused: 'not_allowlisted' }],
  ['https://hooks.example.com:8443', { refused: 'not_allowlisted' }],
  ['http://localhost.:9000', { refused: 'not_allowlisted' }],
  ['http://10.0.0.1:9001', { refused: 'not_allowlisted' }],
  // Allowlisted names are judged by every address they resolve to.
  ['http://cb.example.test:8080', { refused: 'private_address' }],
  ['http://mixed.example.test', { refused: 'private_address' }],
  ['http://meta.example.test', { refused: 'private_address' }],
  ['http://mapped.example.test', { refused: 'private_address' }],
  ['http://zero.example.test', { refused: 'unspecified_address' }],
  ['http://down.example.test', { unresolved: 'ENOTFOUND' }],
  // Accepted: loopback however it is spelled, and allowlisted origins.
  ['http://127.0.0.1:9000', { dial: ['127.0.0.1'] }],
  ['http://127.0.0.5:9000/cb/', { dial: ['127.0.0.5'] }],
  ['http://[::1]:9000', { dial: ['::1'] }],
  ['http://localhost:9000', { dial: ['127.0.0.1', '::1'] }],
  ['http://LocalHost:9000', { dial: ['127.0.0.1', '::1'] }],
  ['http://2130706433:9000', { dial: ['127.0.0.1'] }],
  ['http://0177.0.0.1:9000', { dial: ['127.0.0.1'] }],
  ['http://127.1:9000', { dial: ['127.0.0.1'] }],
  ['http://[::ffff:127.0.0.1]:9000', { dial: ['127.0.0.1'] }],
  ['http://[::ffff:7f00:1]:9000', { dial: ['127.0.0.1'] }],
  ['https://hooks.example.com/relay/', { dial: ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'] }],
  ['https://HOOKS.example.com:443/relay', { dial: ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'] }],
  ['http://10.0.0.1:9000', { dial: ['10.0.0.1'] }],
  ['http://0xa000001:9000', { dial: ['10.0.0.1'] }],
  ['http://lan.example.test:8080', { dial: ['192.168.1.10'] }],
  ['http://lan6.example.test:8080', { dial: ['192.168.1.10'] }],
  ['http://[::ffff:a00:1]:9000', { dial: ['10.0.0.1'] }],
  ['http://loop.example.test', { dial: ['127.0.0.1', '::1'] }],
];

describe('callback URL verdicts', () => {
  const policy = new CallbackPolicy({ allowlist: ALLOWLIST, resolve: tableResolver(DNS) });

  it.each(VERDICTS)('%s', async (url, expected) => {
    expect(summary(await policy.check(url))).toEqual(expected);
  });

  it('judges IP literals and loopback names without a lookup', async () => {
    const resolve = tableResolver(DNS);
    const cheap = new CallbackPolicy({ allowlist: ALLOWLIST, resolve });
    for (const url of [
      'http://127.0.0.1:9000',
      'http://localhost:9000',
      'http://[::1]:9000',
      'http://10.0.0.1',
      'http://10.0.0.1:9000',
      'https://evil.example.com',
    ]) {
      await cheap.check(url);
    }
    expect(resolve.calls).toEqual([]);
  });

  it('resolves an allowlisted name once per check', async () => {
    const resolve = tableResolver(DNS);
    const once = new CallbackPolicy({ allowlist: ALLOWLIST, resolve });
    await once.check('https://hooks.example.com/relay');
    expect(resolve.calls).toEqual(['hooks.example.com']);
  });

  it('keeps the path as the base of every reply URL, without its trailing slash', () => {
    expect(checkCallbackUrl('http://127.0.0.1:9000/hooks/relay/', [])).toMatchObject({
      kind: 'accepted',
      target: { origin: 'http://127.0.0.1:9000', basePath: '/hooks/relay' },
    });
    expect(checkCallbackUrl('http://127.0.0.1:9000', [])).toMatchObject({ target: { basePath: '' } });
  });

  it('plans a lookup for an allowlisted name, and pins loopback without one', () => {
    expect(checkCallbackUrl('https://hooks.example.com', ['https://hooks.example.com'])).toMatchObject({
      kind: 'accepted',
      connect: { kind: 'resolve', hostname: 'hooks.example.com' },
    });
    expect(checkCallbackUrl('http://localhost:1', [])).toMatchObject({ connect: { kind: 'pinned', addresses: ['127.0.0.1', '::1'] } });
  });

  it('refuses the unspecified address even when it is allowlisted', () => {
    expect(checkCallbackUrl('http://0.0.0.0:9000', ['http://0.0.0.0:9000'])).toMatchObject({
      kind: 'refused',
      reason: 'unspecified_address',
    });
  });

  it('never quotes the credentials of a refused URL', async () => {
    const check = await policy.check('http://alice:s3cret-token@127.0.0.1:9000');
    expect(check).toMatchObject({ kind: 'refused', reason: 'userinfo' });
    expect(JSON.stringify(check)).not.toContain('s3cret-token');
  });
});

describe('loopback callbacks', () => {
  const resolve = tableResolver({ ...DNS, 'loop9000.example.test': ['127.0.0.1'] });
  // Named exactly, these pass whatever the loopback rule says; loop9000's own address is named too.
  const allowlist = [...ALLOWLIST, 'http://127.0.0.1:7000', 'http://localhost:7001', 'http://loop9000.example.test:9000'];

  const OFF: Array<[string, Expected]> = [
    ['http://127.0.0.1:8080', { refused: 'loopback_off' }],
    ['http://localhost:8080', { refused: 'loopback_off' }],
    ['http://[::1]:8080', { refused: 'loopback_off' }],
    ['http://2130706433:8080', { refused: 'loopback_off' }],
    ['http://[::ffff:127.0.0.1]:8080', { refused: 'loopback_off' }],
    ['http://loop.example.test', { refused: 'loopback_off' }],
    ['http://127.0.0.1:7000', { dial: ['127.0.0.1'] }],
    ['http://localhost:7001', { dial: ['127.0.0.1', '::1'] }],
    ['http://10.0.0.1', { refused: 'not_allowlisted' }],
    ['https://hooks.example.com', { dial: ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'] }],
  ];

  it.each(OFF)('off: %s', async (url, expected) => {
    const off = new CallbackPolicy({ allowlist, loopback: false, resolve });
    expect(summary(await off.check(url))).toEqual(expected);
  });

  const PORTS: Array<[string, Expected]> = [
    ['http://127.0.0.1:8080', { dial: ['127.0.0.1'] }],
    ['http://127.0.0.1:9000', { dial: ['127.0.0.1'] }],
    ['http://127.0.0.1:9100/cb', { dial: ['127.0.0.1'] }],
    ['http://[::1]:9050', { dial: ['::1'] }],
    ['http://localhost:9000', { dial: ['127.0.0.1', '::1'] }],
    ['http://127.0.0.1:8081', { refused: 'loopback_port' }],
    ['http://127.0.0.1:9101', { refused: 'loopback_port' }],
    ['http://0177.0.0.1:8999', { refused: 'loopback_port' }],
    // No port in the URL: the scheme's own, 80 or 443.
    ['http://localhost', { refused: 'loopback_port' }],
    ['https://127.0.0.1', { refused: 'loopback_port' }],
    ['http://loop.example.test', { refused: 'loopback_port' }],
    ['http://loop9000.example.test:9000', { dial: ['127.0.0.1'] }],
    ['http://127.0.0.1:7000', { dial: ['127.0.0.1'] }],
  ];

  it.each(PORTS)('on ports 8080, 9000-9100: %s', async (url, expected) => {
    const some = new CallbackPolicy({ allowlist, loopbackPorts: [8080, [9000, 9100]], resolve });
    expect(summary(await some.check(url))).toEqual(expected);
  });

  it('says why, naming the ports that are allowed', async () => {
    const some = new CallbackPolicy({ allowlist: [], loopbackPorts: [8080, [9000, 9100]] });
    expect(await some.check('http://127.0.0.1:9200/cb')).toEqual({
      kind: 'refused',
      reason: 'loopback_port',
      message:
        'http://127.0.0.1:9200 is a loopback address on port 9200, and this host allows loopback callbacks on ports 8080, 9000-9100 only',
    });
    const off = new CallbackPolicy({ allowlist: [], loopback: false });
    expect(await off.check('http://localhost:9200')).toMatchObject({
      reason: 'loopback_off',
      message: expect.stringMatching(/^http:\/\/localhost:9200 is a loopback address, .*only allowlisted origins/),
    });
  });

  it('refuses ports with loopback off, and bad ports', () => {
    expect(() => new CallbackPolicy({ allowlist: [], loopback: false, loopbackPorts: [8080] })).toThrow(/loopback callbacks are off/);
    expect(() => new CallbackPolicy({ allowlist: [], loopbackPorts: [] })).toThrow(/empty/);
    expect(() => new CallbackPolicy({ allowlist: [], loopbackPorts: [[9100, 9000]] })).toThrow(/backwards/);
    expect(() => new CallbackPolicy({ allowlist: [], loopbackPorts: [0] })).toThrow(/1 to 65535/);
  });
});

describe('a lookup that does not answer', () => {
  it("ends at the policy's time limit with a result of its own", async () => {
    const slow = new CallbackPolicy({ allowlist: ['http://slow.example.test'], resolve: () => new Promise(() => {}), lookupTimeoutMs: 50 });
    expect(await slow.check('http://slow.example.test/cb')).toEqual({
      kind: 'lookup_timeout',
      message: 'slow.example.test did not resolve within 50 ms',
    });
  });
});

describe('classifyAddress', () => {
  const CLASSES: Array<[string, AddressClass]> = [
    ['8.8.8.8', 'public'],
    ['172.32.0.1', 'public'],
    ['100.128.0.1', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['100.64.0.1', 'private'],
    ['169.254.1.1', 'link_local'],
    ['169.254.169.254', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['224.0.0.1', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    // Globally routed, but special-purpose (AMT, AS112): any range ipaddr.js names is not "public".
    ['192.52.193.1', 'reserved'],
    ['2620:4f:8000::1', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['2606:4700::1111', 'public'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fec0::1', 'private'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['ff02::1', 'multicast'],
    ['fd00:ec2::254', 'metadata'],
    ['2001:db8::1', 'reserved'],
    ['100::1', 'reserved'],
    ['4000::1', 'reserved'],
    // IPv6 forms that carry an IPv4 address are judged by it.
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:a00:1', 'private'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['::a00:1', 'private'],
    ['::7f00:1', 'loopback'],
    ['64:ff9b::a00:1', 'private'],
    ['64:ff9b::808:808', 'public'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['2002:a00:1::1', 'private'],
    ['2002:808:808::1', 'public'],
    ['::ffff:0:a00:1', 'private'],
    // A translator's loopback is the translator itself, not this host.
    ['64:ff9b::7f00:1', 'private'],
  ];

  it.each(CLASSES)('%s is %s', (ip, expected) => {
    expect(classifyAddress(ip)).toBe(expected);
  });

  it('throws on something that is not an IP address', () => {
    expect(() => classifyAddress('example.com')).toThrow(TypeError);
  });
});

describe('parseAllowlist', () => {
  it('normalizes each origin as WHATWG URL serializes it, and an address as the one it dials', () => {
    expect(
      parseAllowlist('https://Example.com:443, http://cb.example.test:8080/,http://[0:0::1]:80,http://[::ffff:10.0.0.1]:9000'),
    ).toEqual(['https://example.com', 'http://cb.example.test:8080', 'http://[::1]', 'http://10.0.0.1:9000']);
  });

  it('is empty for an empty flag', () => {
    expect(parseAllowlist('')).toEqual([]);
  });

  it.each([
    ['https://example.com/hooks', /without a path/],
    ['https://example.com?x', /without a path, query or fragment/],
    ['ftp://example.com', /http or https/],
    ['example.com', /not an origin/],
    ['http://0.0.0.0:8080', /unspecified/],
    ['https://a.example,,https://b.example', /empty entry/],
  ])('refuses %s', (text, message) => {
    expect(() => parseAllowlist(text)).toThrow(message);
  });

  it('refuses credentials without repeating them', () => {
    expect(() => parseAllowlist('https://admin:hunter2@example.com')).toThrow(/credentials/);
    expect(() => parseAllowlist('https://admin:hunter2@example.com')).not.toThrow(/hunter2/);
  });

  it('guards the policy too', () => {
    expect(() => new CallbackPolicy({ allowlist: ['https://example.com/path'] })).toThrow(/without a path/);
  });
});
