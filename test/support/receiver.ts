/**
 * What the callback tests share: a real HTTP(S) receiver on a loopback address, certificates made for it, a
 * count of the client sockets the process opens, and resolvers that answer from a table (a test never asks
 * real DNS, so even wrong code under test cannot send a packet beyond loopback, and `guardSystemDns` catches
 * one that dials a name).
 */
import { randomUUID } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import * as http from 'node:http';
import * as https from 'node:https';
import { createRequire } from 'node:module';
import { isIP, type AddressInfo } from 'node:net';
import { generate } from 'selfsigned';
import type { Resolver } from '../../adapters/callback/policy.js';

export interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/** A key and certificate (PEM) to serve https with. */
export interface ReceiverTls {
  readonly key: string;
  readonly cert: string;
}

/** Answers one request; leaving `response` alone keeps the request hanging. */
export type Answer = (received: Received, response: http.ServerResponse) => void;

const ok: Answer = (_received, response) => {
  response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
};

export class Receiver {
  readonly requests: Received[] = [];
  private waiters: Array<() => void> = [];

  private constructor(
    private readonly server: http.Server,
    readonly host: string,
    readonly port: number,
    private readonly scheme: 'http' | 'https',
  ) {}

  static async start(answer: Answer = ok, host = '127.0.0.1', tls?: ReceiverTls): Promise<Receiver> {
    const server = tls === undefined ? http.createServer() : https.createServer({ key: tls.key, cert: tls.cert });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => resolve());
    });
    const receiver = new Receiver(server, host, (server.address() as AddressInfo).port, tls === undefined ? 'http' : 'https');
    server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const received = {
          method: request.method ?? '',
          url: request.url ?? '',
          headers: request.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        };
        receiver.requests.push(received);
        for (const wake of receiver.waiters.splice(0)) wake();
        answer(received, response);
      });
    });
    running.add(receiver);
    return receiver;
  }

  /** `http(s)://{host}:{port}`, brackets and all. */
  get url(): string {
    return `${this.scheme}://${this.host.includes(':') ? `[${this.host}]` : this.host}:${this.port}`;
  }

  /** Resolves once a request has fully arrived. */
  received(): Promise<void> {
    return this.requests.length > 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }

  async close(): Promise<void> {
    running.delete(this);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const running = new Set<Receiver>();

/** For `afterEach`: closes every receiver a test started, even when the test failed half way. */
export async function closeReceivers(): Promise<void> {
  await Promise.all([...running].map((receiver) => receiver.close()));
}

/** A port nothing listens on (one a server just gave back). */
export async function closedPort(): Promise<number> {
  const receiver = await Receiver.start();
  await receiver.close();
  return receiver.port;
}

/** Whether this machine has an IPv6 loopback to listen on. */
export async function hasIPv6Loopback(): Promise<boolean> {
  try {
    await (await Receiver.start(ok, '::1')).close();
    return true;
  } catch {
    return false;
  }
}

/** Counts the client sockets the process opens (`net.connect`, which undici's connector uses) until `stop`. */
export function countClientSockets(): { readonly count: () => number; readonly stop: () => void } {
  let count = 0;
  const onSocket = () => count++;
  subscribe('net.client.socket', onSocket);
  return { count: () => count, stop: () => unsubscribe('net.client.socket', onSocket) };
}

/**
 * A resolver that answers from `table`: one answer per name, or a list of answers for successive lookups
 * (the last repeats). Unknown names fail with ENOTFOUND. `calls` records every lookup.
 */
export function tableResolver(table: Record<string, string[] | { sequence: string[][] }>): Resolver & { readonly calls: string[] } {
  const calls: string[] = [];
  const lookups = new Map<string, number>();
  const resolve = async (hostname: string) => {
    calls.push(hostname);
    const entry = table[hostname];
    if (entry === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    const n = lookups.get(hostname) ?? 0;
    lookups.set(hostname, n + 1);
    const addresses = Array.isArray(entry) ? entry : (entry.sequence[Math.min(n, entry.sequence.length - 1)] ?? []);
    return addresses.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  };
  return Object.assign(resolve, { calls });
}

/** The CommonJS `dns` module object itself: `net` reads its `lookup` on every connect to a name. */
const dns = createRequire(import.meta.url)('node:dns') as { lookup: unknown };

/**
 * Makes every system lookup of a name fail (ENOTFOUND) and records it, until `restore`: code that wrongly
 * dials a host name, instead of an address it checked, fails without asking real DNS. IP literals (a
 * server's `listen('127.0.0.1')` looks its address up too) pass through: they never leave the process.
 */
export function guardSystemDns(): { readonly lookups: string[]; readonly restore: () => void } {
  const original = dns.lookup as (...args: unknown[]) => void;
  const lookups: string[] = [];
  dns.lookup = (hostname: string, options: unknown, callback?: (error: Error) => void) => {
    if (isIP(hostname) !== 0) return original(hostname, options, callback);
    lookups.push(hostname);
    const done = typeof options === 'function' ? (options as (error: Error) => void) : callback;
    process.nextTick(() => done?.(Object.assign(new Error(`no system DNS in tests (${hostname})`), { code: 'ENOTFOUND' })));
  };
  return { lookups, restore: () => (dns.lookup = original) };
}

/** A private CA and a receiver certificate it signed, for `localhost` and 127.0.0.1, made afresh. */
export async function testCertificates(): Promise<ReceiverTls & { readonly ca: string }> {
  const options = { keyType: 'ec', algorithm: 'sha256' } as const;
  const ca = await generate([{ name: 'commonName', value: `assistant-relay test CA ${randomUUID()}` }], {
    ...options,
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
  const receiver = await generate([{ name: 'commonName', value: 'localhost' }], {
    ...options,
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  });
  return { ca: ca.cert, key: receiver.private, cert: receiver.cert };
}
