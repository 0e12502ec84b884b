/**
 * The conformance kit's front: each role it checks, what it needs to be told of the implementation, and
 * a run of its checks. The CLI (`assistant-relay conformance`) parses flags into `KitOptions`; tests
 * call `runRole` directly.
 */
import { randomBytes } from 'node:crypto';
import { CallbackListener } from './callback-listener.js';
import type { CheckResult, Need } from './check.js';
import { FORM_A_HOST_CHECKS } from './form-a-host.js';
import { FORM_B_HOST_CHECKS } from './form-b-host.js';
import { runChecks } from './runner.js';
import { Target } from './target.js';

export const ROLES = ['form-a-host', 'form-b-host'] as const;
export type Role = (typeof ROLES)[number];

/** Every role's checks, as the kit runs them: for docs and tests. */
export const CHECKS_OF = { 'form-a-host': FORM_A_HOST_CHECKS, 'form-b-host': FORM_B_HOST_CHECKS } as const;

export interface KitOptions {
  /** The implementation's base URL: the only place the kit sends traffic. */
  readonly url: URL;
  readonly token: string;
  readonly has: ReadonlySet<Need>;
  readonly only?: readonly string[];
  readonly skip?: readonly string[];
  /** One check's time. */
  readonly checkTimeoutMs: number;
  /** One reply's, and one request's. */
  readonly replyMs: number;
  /** Form A: the keep-alive interval the host is configured with. */
  readonly keepaliveMs: number;
  /** Form A: readers of one session opened before the cap counts as missing. */
  readonly maxReaders: number;
  /** Form B: where the kit listens for the host's callbacks (loopback by default, any free port). */
  readonly listen?: { readonly host: string; readonly port: number };
}

export async function runRole(role: Role, options: KitOptions, onResult?: (result: CheckResult) => void): Promise<CheckResult[]> {
  const common = {
    target: new Target(options.url, options.replyMs),
    token: options.token,
    run: `conformance-${randomBytes(4).toString('hex')}`,
    replyMs: options.replyMs,
  };
  const selection = {
    ...(options.only === undefined ? {} : { only: options.only }),
    ...(options.skip === undefined ? {} : { skip: options.skip }),
    has: options.has,
    timeoutMs: options.checkTimeoutMs,
  };
  if (role === 'form-a-host')
    return runChecks(
      FORM_A_HOST_CHECKS,
      { ...common, keepaliveMs: options.keepaliveMs, maxReaders: options.maxReaders },
      selection,
      onResult,
    );
  const listener = await CallbackListener.listen(options.listen?.host, options.listen?.port);
  try {
    return await runChecks(FORM_B_HOST_CHECKS, { ...common, listener }, selection, onResult);
  } finally {
    await listener.close();
  }
}
