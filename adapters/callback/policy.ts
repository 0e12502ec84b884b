/**
 * The connect-time callback check (4.3 rule 6): the URL rules of protocol/callback-url, then, for an
 * allowlisted host name, ONE lookup, bounded in time, whose every address must pass. The transport dials
 * only the addresses of that answer, so a second lookup that says something else (DNS rebinding) is never
 * asked. Loopback and IP-literal URLs are judged without any lookup, cheaply enough to run on
 * `POST /v1/incoming`.
 */
import { lookup } from 'node:dns/promises';
import {
  checkCallbackUrl,
  judgeResolved,
  parseAllowedOrigin,
  type CallbackConnectable,
  type CallbackRefusal,
  type LoopbackPorts,
} from '../../protocol/callback-url.js';
import { portRanges, type PortRange } from '../../protocol/port-ranges.js';
import { failureCode } from '../../engine/chat/callback.js';
import { systemClock, type Clock, type TimerHandle } from '../../engine/core/clock.js';

/** Answers IP addresses, as `dns.lookup` does; anything else makes `check` reject. */
export type Resolver = (hostname: string) => Promise<ReadonlyArray<{ address: string; family: 4 | 6 }>>;

/** The system resolver, answers in its own order (`verbatim`), as a connect would try them. */
export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({
    address,
    family: family === 6 ? 6 : 4,
  }));

/**
 * What a check came to. `unresolved`: the allowlisted name did not resolve (`code`: e.g. ENOTFOUND);
 * nothing was judged, and the next attempt looks again. `lookup_timeout`: the lookup did not answer within
 * the policy's limit; nothing was judged either.
 */
export type CallbackCheck =
  | CallbackConnectable
  | CallbackRefusal
  | { readonly kind: 'unresolved'; readonly code: string }
  | { readonly kind: 'lookup_timeout'; readonly message: string };

/** How long one lookup of an allowlisted name may take: 2 s, well inside an attempt's 5. */
const LOOKUP_TIMEOUT_MS = 2_000;

export interface CallbackPolicyOptions {
  /** Allowed origins; each is validated and normalized as `parseAllowedOrigin` does (throws on a bad one). */
  readonly allowlist: readonly string[];
  /** Loopback callbacks without an allowlist entry: on (the default) or off. */
  readonly loopback?: boolean;
  /** With loopback on, only these ports and ranges (default: every port); throws on a bad one. */
  readonly loopbackPorts?: ReadonlyArray<number | PortRange>;
  readonly resolve?: Resolver;
  /** The limit of one lookup; default 2 s. */
  readonly lookupTimeoutMs?: number;
  /** Times the lookup limit. */
  readonly clock?: Clock;
}

export class CallbackPolicy {
  private readonly allowlist: readonly string[];
  private readonly loopback: LoopbackPorts;
  private readonly resolve: Resolver;
  private readonly lookupTimeoutMs: number;
  private readonly clock: Clock;

  constructor(options: CallbackPolicyOptions) {
    this.allowlist = options.allowlist.map(parseAllowedOrigin);
    this.loopback = loopbackRule(options.loopback ?? true, options.loopbackPorts);
    this.resolve = options.resolve ?? systemResolver;
    this.lookupTimeoutMs = options.lookupTimeoutMs ?? LOOKUP_TIMEOUT_MS;
    this.clock = options.clock ?? systemClock;
  }

  async check(url: string): Promise<CallbackCheck> {
    const verdict = checkCallbackUrl(url, this.allowlist, this.loopback);
    if (verdict.kind === 'refused') return verdict;
    const { target, connect } = verdict;
    if (connect.kind === 'pinned') return { kind: 'accepted', target, addresses: connect.addresses };
    let answers: Awaited<ReturnType<Resolver>> | typeof TIMED_OUT;
    try {
      answers = await within(this.resolve(connect.hostname), this.lookupTimeoutMs, this.clock);
    } catch (error) {
      return { kind: 'unresolved', code: failureCode(error) };
    }
    if (answers === TIMED_OUT) {
      return { kind: 'lookup_timeout', message: `${connect.hostname} did not resolve within ${this.lookupTimeoutMs} ms` };
    }
    const [first, ...rest] = answers.map((answer) => answer.address);
    if (first === undefined) return { kind: 'unresolved', code: 'ENOTFOUND' };
    return judgeResolved(target, connect.hostname, [first, ...rest], this.allowlist, this.loopback);
  }
}

function loopbackRule(on: boolean, ports: ReadonlyArray<number | PortRange> | undefined): LoopbackPorts {
  if (!on && ports !== undefined) throw new Error('loopback callback ports are set, but loopback callbacks are off');
  if (!on) return [];
  return ports === undefined ? 'any' : portRanges(ports);
}

const TIMED_OUT = Symbol('timed out');

/** `promise`, or `TIMED_OUT` once `ms` have passed; the lookup itself cannot be cancelled, only no longer awaited. */
async function within<T>(promise: Promise<T>, ms: number, clock: Clock): Promise<T | typeof TIMED_OUT> {
  let timer: TimerHandle;
  const late = new Promise<typeof TIMED_OUT>((resolve) => (timer = clock.setTimeout(() => resolve(TIMED_OUT), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clock.clearTimeout(timer);
  }
}
