/**
 * The client's side of a key rotation over the backend (PROTOCOL.md 7.12): ask under the current keys,
 * wait for the plugin's answer (it comes through the plugin's job stream, so a plugin that is offline
 * answers when it is back), check it, and hand back the new keys. Browser-safe.
 */
import { ClientRekey, type SessionKeys } from '../../protocol/byo/index.js';
import { RekeyView } from '../../protocol/pairing-wire.js';
import type { BackendClient } from './backend-client.js';
import { sleep } from '../../engine/core/clock.js';
import { PairingFailed } from './pairing.js';

export async function rotateKeys(options: {
  /** The integration's client, with its client token. */
  readonly client: BackendClient;
  readonly integrationId: string;
  readonly current: SessionKeys;
  /** Give up after this long without an answer (on the client's clock). */
  readonly timeoutMs: number;
  readonly pollMs?: number;
}): Promise<SessionKeys> {
  const rekey = new ClientRekey(options.integrationId, options.current, crypto.randomUUID());
  await options.client.call(RekeyView, '/rekeys', { method: 'POST', body: rekey.request() });
  const { clock } = options.client;
  const until = clock.now() + options.timeoutMs;
  for (;;) {
    const view = await options.client.call(RekeyView, `/rekeys/${rekey.rekeyId}`, { method: 'GET' });
    if (view.answer !== undefined) return rekey.finish(view.answer);
    if (clock.now() >= until) {
      throw new PairingFailed('rekey_unanswered', 'the assistant did not answer the key rotation in time: the keys are unchanged');
    }
    await sleep(clock, options.pollMs ?? 250);
  }
}
