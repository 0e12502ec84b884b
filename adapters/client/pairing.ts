/**
 * Both sides of a pairing over the backend relay (5, PROTOCOL.md 7): each sends its messages in order and
 * waits for the other's by reading the pairing (every `pollMs`). Each side shows its person the short
 * authentication string and goes on only once the person says the other side shows the same
 * (`confirmSas`): until then it sends nothing that completes the pairing, and a no aborts it. Whatever a
 * side finds wrong (a key that is not the one committed to, a confirmation that does not match) aborts
 * the pairing at the backend too, so the other side stops waiting, and throws. Browser-safe: the keys are
 * handed back, and where they are kept is the caller's business.
 */
import type { z } from 'zod';
// Modules of protocol/, never its index: the index also holds Node-only ones, and this file runs in a browser.
import {
  AssistantPairing,
  ClientPairing,
  PairingError,
  SECRET_LENGTH,
  crockfordRandom,
  formatCode,
  parseCode,
  type SessionKeys,
} from '../../protocol/byo/index.js';
import {
  AssistantConfirmAnswer,
  ClientConfirmAnswer,
  PairingJoinAnswer,
  PairingStartAnswer,
  PairingView,
} from '../../protocol/pairing-wire.js';
import { ENVELOPE_VERSION, SCHEMA_VERSION } from '../../protocol/reasoning.js';
import { BackendClient, BackendError } from './backend-client.js';
import { sleep } from '../../engine/core/clock.js';
import { clientClock, type Clock } from './clock.js';

export interface PairingOptions {
  /** The backend relay's base URL. */
  readonly backend: string;
  /** How often a side reads the pairing while it waits for the other. Default 250 ms. */
  readonly pollMs?: number;
  /** Where its waits are timed. Default the system's. */
  readonly clock?: Clock;
  /**
   * The confirmation step (PROTOCOL.md 7.7): handed the short authentication string (`123 456`) to show,
   * it resolves true once the person has seen the other side show the same, false if it shows another
   * (that aborts the pairing, `sas_rejected`). The pairing waits for it; `signal` aborts if the pairing
   * ends meanwhile (the other side gave up, or it expired): stop asking then. A script that cannot ask
   * anyone may resolve true at once, and is then not protected from a relay in the middle.
   */
  readonly confirmSas: ConfirmSas;
}

export type ConfirmSas = (sas: string, signal: AbortSignal) => boolean | Promise<boolean>;

/** What a side ends with. */
export interface Paired {
  readonly integration_id: string;
  readonly provider_kind: string;
  /** The side's token for the integration: the client's token, or the plugin's RELAY_TOKEN. */
  readonly token: string;
  readonly keys: SessionKeys;
  readonly sas: string;
}

/** The pairing failed: aborted by a side (`code` says why), expired, or refused by the backend. */
export class PairingFailed extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A pairing that ended before this side was done fails the side: aborted (by whom, why) or expired. */
function failIfEnded(view: PairingView): void {
  if (view.state === 'aborted')
    throw new PairingFailed('pairing_aborted', `the ${view.aborted!.by}'s side aborted the pairing: ${view.aborted!.reason}`);
  if (view.state === 'expired' || view.state === 'completed')
    throw new PairingFailed('pairing_ended', `the pairing ${view.state === 'expired' ? 'expired' : 'ended'} before this side was done`);
}

/** One side's session with the backend for one pairing. */
class Exchange {
  constructor(
    private readonly client: BackendClient,
    private readonly pollMs: number,
  ) {}

  async post<T>(schema: z.ZodType<T>, step: string, body: unknown): Promise<T> {
    try {
      return await this.client.call(schema, `/${step}`, { method: 'POST', body });
    } catch (error) {
      // The pairing ended before this message came: say how, as a wait would have.
      if (error instanceof BackendError && error.code === 'pairing_ended')
        failIfEnded(await this.client.call(PairingView, '', { method: 'GET' }));
      throw error;
    }
  }

  /** Reads the pairing until `ready` holds of it; an ended pairing fails the wait. */
  async until(ready: (view: PairingView) => boolean): Promise<PairingView> {
    for (;;) {
      const view = await this.client.call(PairingView, '', { method: 'GET' });
      if (ready(view)) return view;
      failIfEnded(view);
      await sleep(this.client.clock, this.pollMs);
    }
  }

  /**
   * The person's answer to the short authentication string, while the pairing is read every `pollMs`: if
   * it ends meanwhile, that fails the wait and the question is withdrawn (its signal aborts). A no aborts
   * the pairing.
   */
  async confirmedBy(person: ConfirmSas, sas: string, side: 'client' | 'assistant'): Promise<void> {
    const asking = new AbortController();
    const watching = (async () => {
      while (!asking.signal.aborted) {
        failIfEnded(await this.client.call(PairingView, '', { method: 'GET' }));
        await sleep(this.client.clock, this.pollMs);
      }
      // Only an ended pairing settles this first: the loop stops once the answer is in.
      return false;
    })();
    let same: boolean;
    try {
      same = await Promise.race([Promise.resolve().then(() => person(sas, asking.signal)), watching]);
    } finally {
      asking.abort();
      watching.catch(() => undefined);
    }
    if (same) return;
    const why = `the person at the ${side}'s side saw another short authentication string on the other side`;
    await this.post(PairingView, 'abort', { reason: `sas_rejected: ${why}` }).catch(() => undefined);
    throw new PairingFailed('sas_rejected', why);
  }

  /** Runs a side's check; what it finds wrong aborts the pairing at the backend before it is thrown. */
  async checked<T>(check: () => T): Promise<T> {
    try {
      return check();
    } catch (error) {
      if (!(error instanceof PairingError)) throw error;
      await this.post(PairingView, 'abort', { reason: `${error.code}: ${error.message}` }).catch(() => undefined);
      throw new PairingFailed(error.code, error.message);
    }
  }
}

/**
 * The client's side: starts a pairing (with the operator's `ticket`, for a backend that asks for one) and
 * hands `onCode` the code to show; once the assistant's side has joined, the person has confirmed the
 * short authentication string, and both sides have confirmed their keys, resolves with the client token
 * and the keys. The client token comes before the assistant's confirmation, and is void if the pairing
 * ends without it: it is handed back only once the pairing has completed.
 */
export async function pairAsClient(
  options: PairingOptions & { readonly providerKind: string; readonly onCode: (code: string) => void; readonly ticket?: string },
): Promise<Paired> {
  const pairings = new BackendClient(`${options.backend}/api/v1/pairings`, undefined, options.clock ?? clientClock);
  const started = await pairings.call(PairingStartAnswer, '', {
    method: 'POST',
    body: {
      provider_kind: options.providerKind,
      schema_version: SCHEMA_VERSION,
      envelope_version: ENVELOPE_VERSION,
      ...(options.ticket === undefined ? {} : { ticket: options.ticket }),
    },
  });
  const secret = crockfordRandom(SECRET_LENGTH);
  options.onCode(formatCode({ handle: started.handle, secret }));
  const exchange = new Exchange(pairings.at(`/${started.pairing_id}`, started.pairing_token), options.pollMs ?? 250);
  const side = new ClientPairing(started.pairing_id, secret, { schema_version: SCHEMA_VERSION, envelope_version: ENVELOPE_VERSION });
  const committed = await exchange.until((view) => view.commitment !== undefined);
  await exchange.post(PairingView, 'client-key', { client_key: side.clientKey(committed.commitment!) });
  const revealed = await exchange.until((view) => view.nonce !== undefined);
  const { sas, confirmation } = await exchange.checked(() => side.reveal(revealed.assistant_key!, revealed.nonce!));
  await exchange.confirmedBy(options.confirmSas, sas, 'client');
  const { client_token } = await exchange.post(ClientConfirmAnswer, 'client-confirm', { confirmation });
  const completed = await exchange
    .until((view) => view.state === 'completed')
    .catch((error: unknown) => {
      if (error instanceof PairingFailed && error.code === 'pairing_ended')
        throw new PairingFailed('pairing_ended', 'the pairing expired before the assistant confirmed');
      throw error;
    });
  // Completed at the backend, but a confirmation that does not match means someone in the middle: these keys are not used.
  const keys = await exchange.checked(() => side.finish(completed.assistant_confirmation!));
  return { integration_id: completed.integration_id!, provider_kind: completed.provider_kind, token: client_token, keys, sas };
}

/** The assistant's side: joins with the code a person gave it, and pairs once the person has confirmed the short authentication string. */
export async function pairAsAssistant(options: PairingOptions & { readonly code: string }): Promise<Paired> {
  const code = parseCode(options.code);
  if (code === undefined)
    throw new PairingFailed('invalid_code', 'a pairing code is 20 characters of Crockford base32, e.g. 7K3QD-M4X9P-ZR2T6-VHW8N');
  const pairings = new BackendClient(`${options.backend}/api/v1/pairings`, undefined, options.clock ?? clientClock);
  const joined = await pairings.call(PairingJoinAnswer, '/join', { method: 'POST', body: { handle: code.handle } });
  const exchange = new Exchange(pairings.at(`/${joined.pairing_id}`, joined.pairing_token), options.pollMs ?? 250);
  const side = new AssistantPairing(joined.pairing_id, code.secret, {
    schema_version: joined.schema_version,
    envelope_version: joined.envelope_version,
  });
  await exchange.post(PairingView, 'commit', { commitment: side.commitment() });
  const keyed = await exchange.until((view) => view.client_key !== undefined);
  const revealed = await exchange.checked(() => side.reveal(keyed.client_key!));
  // Revealed first, so that both people see their strings at once; nothing completes until this one says yes.
  await exchange.post(PairingView, 'reveal', { assistant_key: revealed.assistant_key, nonce: revealed.nonce });
  await exchange.confirmedBy(options.confirmSas, revealed.sas, 'assistant');
  const confirmedByClient = await exchange.until((view) => view.client_confirmation !== undefined);
  const { confirmation, keys } = await exchange.checked(() => side.confirm(confirmedByClient.client_confirmation!));
  const done = await exchange.post(AssistantConfirmAnswer, 'assistant-confirm', { confirmation });
  return { integration_id: done.integration_id, provider_kind: joined.provider_kind, token: done.relay_token, keys, sas: revealed.sas };
}
