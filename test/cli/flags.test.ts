/** The flags every command shares: a string or boolean flag, the command line winning over its environment variable. */
import { describe, expect, it } from 'vitest';
import { UsageError, baseUrlFlag, parseOrigins, parseProxies, readFlags } from '../../adapters/cli/flags.js';

const SPEC = { backend: { type: 'string' }, wait: { type: 'boolean' } } as const;

describe('readFlags', () => {
  it('reads a string and a boolean flag from the command line', () => {
    const flags = readFlags(['--backend', 'http://127.0.0.1:1', '--wait'], SPEC, {});
    expect([flags('backend'), flags('wait')]).toEqual(['http://127.0.0.1:1', true]);
  });

  it('falls back to ASSISTANT_RELAY_<FLAG>, a boolean set by 1 or true and unset by anything else', () => {
    expect(readFlags([], SPEC, { ASSISTANT_RELAY_BACKEND: 'http://127.0.0.1:2', ASSISTANT_RELAY_WAIT: '1' })('wait')).toBe(true);
    expect(readFlags([], SPEC, { ASSISTANT_RELAY_WAIT: 'true' })('wait')).toBe(true);
    expect(readFlags([], SPEC, { ASSISTANT_RELAY_WAIT: '0' })('wait')).toBe(false);
    expect(readFlags([], SPEC, {})('wait')).toBeUndefined();
    expect(readFlags(['--backend', 'http://127.0.0.1:3'], SPEC, { ASSISTANT_RELAY_BACKEND: 'http://127.0.0.1:2' })('backend')).toBe(
      'http://127.0.0.1:3',
    );
  });

  it('refuses an unknown flag, a positional and a boolean given a value, as usage errors', () => {
    for (const argv of [['--nope'], ['positional'], ['--wait=yes']]) expect(() => readFlags(argv, SPEC, {})).toThrow(UsageError);
  });
});

describe('parseOrigins', () => {
  it('takes origins as a browser writes them, and refuses anything else', () => {
    expect(parseOrigins('cors-origin', 'https://App.example, http://localhost:5173/')).toEqual([
      'https://app.example',
      'http://localhost:5173',
    ]);
    expect(parseOrigins('cors-origin', undefined)).toEqual([]);
    for (const bad of [
      'app.example',
      'https://app.example/path',
      'ftp://app.example',
      'https://user@app.example',
      'https://app.example?x=1',
    ]) {
      expect(() => parseOrigins('cors-origin', bad), bad).toThrow(/--cors-origin: .* is not an origin/);
    }
  });
});

describe('baseUrlFlag', () => {
  it('takes an http(s) URL without its trailing slashes, and names the flag when it refuses one', () => {
    expect(baseUrlFlag('url', 'http://127.0.0.1:8787//')).toBe('http://127.0.0.1:8787');
    expect(() => baseUrlFlag('url', 'ftp://host')).toThrow(/^--url must be an http or https URL/);
    expect(() => baseUrlFlag('backend', 'not a url')).toThrow(/^--backend must be an http or https URL/);
  });
});

describe('parseProxies', () => {
  it('takes addresses, CIDR ranges and the names of ranges, and refuses anything else', () => {
    expect(parseProxies('trust-proxy', '10.0.0.1, 10.0.0.0/8,2001:db8::/32, loopback')).toEqual([
      '10.0.0.1',
      '10.0.0.0/8',
      '2001:db8::/32',
      'loopback',
    ]);
    expect(parseProxies('trust-proxy', undefined)).toEqual([]);
    for (const bad of ['proxy.example', '10.0.0.0/33', '10.0.0.1/8/8', 'true', '*', '2001:db8::/129']) {
      expect(() => parseProxies('trust-proxy', bad), bad).toThrow(UsageError);
    }
  });
});
