/**
 * The conformance kit's front: each role it checks, what it needs to be told of the implementation, and
 * a run of its checks. The CLI (`assistant-relay conformance`) parses flags into `KitOptions`; tests
 * call `runRole` directly.
 */
import { randomBytes } from 'node:crypto';
import { CallbackListener } from './callback-listener.js';
import type { CheckResult, Need } from './check.js';
import { BACKEND_RELAY_CHECKS } from './backend-relay.js';
import type { BackendRelayContext } from './backend-wire.js';
import { FORM_A_HOST_CHECKS } from './form-a-host.js';
import { FORM_B_HOST_CHECKS } from './form-b-host.js';
import { KitBackend } from './kit-backend.js';
import { PLUGIN_CHECKS } from './plugin.js';
import { runChecks } from './runner.js';
import { Target } from './target.js';

export const ROLES = ['form-a-host', 'form-b-host', 'backend', 'plugin'] as const;
export type Role = (typeof ROLES)[number];

/** Every role's checks, as the kit runs them: for docs and tests. */
export const CHECKS_OF = {
  'form-a-host': FORM_A_HOST_CHECKS,
  'form-b-host': FORM_B_HOST_CHECKS,
  backend: BACKEND_RELAY_CHECKS,
  plugin: PLUGIN_CHECKS,
} as const;

export interface KitOptions {
  /** The implementation's base URL: the only place the kit sends traffic (none for the plugin: the kit is its backend). */
  readonly url?: URL;
  /** A host's Bearer token (both forms). */
  readonly token?: string;
  /** The backend relay: the integration the kit plays the plugin and the client of, with their tokens. */
  readonly integration?: { readonly id: string; readonly relayToken: string; readonly clientToken: string };
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
  /** Form B and the plugin: where the kit listens, for the host's callbacks or as the plugin's backend (loopback by default, any free port). */
  readonly listen?: { readonly host: string; readonly port: number };
  /** The plugin: the provider it serves, and how it is started against the kit's backend (stopped by what `start` returns). */
  readonly plugin?: { readonly providerKind: string; readonly start: (backend: PluginBackend) => Promise<() => Promise<void>> };
}

/**
 * What the plugin under test is given: the kit's backend URL, its integration and RELAY_TOKEN; or, for a
 * plugin that pairs (`byo`), the pairing code it joins with (it gets the integration by pairing).
 */
export interface PluginBackend {
  readonly url: string;
  readonly integrationId: string;
  readonly relayToken: string;
  readonly pairingCode?: string;
}

export async function runRole(role: Role, options: KitOptions, onResult?: (result: CheckResult) => void): Promise<CheckResult[]> {
  const targetOf = () => {
    if (options.url === undefined) throw new TypeError(`the ${role} role needs the implementation's URL`);
    return new Target(options.url, options.replyMs);
  };
  const selection = {
    ...(options.only === undefined ? {} : { only: options.only }),
    ...(options.skip === undefined ? {} : { skip: options.skip }),
    has: options.has,
    timeoutMs: options.checkTimeoutMs,
  };
  if (role === 'backend') {
    const { integration } = options;
    if (integration === undefined) throw new TypeError('the backend role needs an integration and its two tokens');
    const context: BackendRelayContext = {
      target: targetOf(),
      replyMs: options.replyMs,
      integrationId: integration.id,
      relayToken: integration.relayToken,
      clientToken: integration.clientToken,
      shared: {},
    };
    try {
      return await runChecks(BACKEND_RELAY_CHECKS, context, selection, onResult);
    } finally {
      context.shared.closed = true;
      context.shared.stream?.close();
    }
  }
  if (role === 'plugin') {
    const { plugin } = options;
    if (plugin === undefined) throw new TypeError('the plugin role needs a way to start the plugin');
    const backend = await KitBackend.listen(options.listen?.host, options.listen?.port);
    // A plugin that pairs (BYO) is given a code instead of an integration it already has.
    const pairingCode = options.has.has('byo') ? backend.pair(plugin.providerKind).code : undefined;
    let stop: (() => Promise<void>) | undefined;
    try {
      stop = await plugin.start({
        url: backend.url,
        integrationId: backend.integrationId,
        relayToken: backend.relayToken,
        ...(pairingCode === undefined ? {} : { pairingCode }),
      });
      return await runChecks(PLUGIN_CHECKS, { backend, providerKind: plugin.providerKind, replyMs: options.replyMs }, selection, onResult);
    } finally {
      await stop?.();
      await backend.close();
    }
  }
  if (options.token === undefined) throw new TypeError(`the ${role} role needs the host's token`);
  const host = { target: targetOf(), replyMs: options.replyMs, token: options.token, run: `conformance-${randomBytes(4).toString('hex')}` };
  if (role === 'form-a-host')
    return runChecks(
      FORM_A_HOST_CHECKS,
      { ...host, keepaliveMs: options.keepaliveMs, maxReaders: options.maxReaders },
      selection,
      onResult,
    );
  const listener = await CallbackListener.listen(options.listen?.host, options.listen?.port);
  try {
    return await runChecks(FORM_B_HOST_CHECKS, { ...host, listener }, selection, onResult);
  } finally {
    await listener.close();
  }
}
