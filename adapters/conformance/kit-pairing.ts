/**
 * A pairing as the kit plays it for a plugin under test (PROTOCOL.md 7.6): the kit is the backend's
 * pairing routes and the client's side at once, and says yes to the short authentication string as a
 * person would who saw the same on both sides. The plugin joins with the code the kit made; once both
 * confirmations check, the kit holds the pairing's keys, and the plugin's integration is the kit's own.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import {
  ClientPairing,
  HANDLE_LENGTH,
  PairingError,
  SECRET_LENGTH,
  crockfordRandom,
  formatCode,
  keyringOf,
  type Keyring,
} from '../../protocol/byo/index.js';

const VERSIONS = { schema_version: 1, envelope_version: 1 } as const;
/** As a backend of this release: a pairing lasts 10 minutes (PROTOCOL.md 7.8). */
const PAIRING_MS = 10 * 60_000;

type Answer = { readonly status: number; readonly body: unknown };

export class KitPairing {
  readonly pairingId = randomUUID();
  private readonly handle = crockfordRandom(HANDLE_LENGTH);
  private readonly secret = crockfordRandom(SECRET_LENGTH);
  private readonly token = randomBytes(24).toString('base64url');
  private readonly client = new ClientPairing(this.pairingId, this.secret, VERSIONS);
  private readonly view: Record<string, unknown>;
  /** The pairing's keys, once both confirmations checked. */
  keyring: Keyring | undefined;
  /** Why the pairing ended without keys. */
  failed: string | undefined;

  constructor(
    providerKind: string,
    private readonly integration: { readonly integration_id: string; readonly relay_token: string },
  ) {
    const now = Date.now();
    this.view = {
      pairing_id: this.pairingId,
      provider_kind: providerKind,
      ...VERSIONS,
      state: 'started',
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + PAIRING_MS).toISOString(),
    };
  }

  /** The code a person would carry to the assistant's side. */
  get code(): string {
    return formatCode({ handle: this.handle, secret: this.secret });
  }

  /** A request under `/api/v1/pairings` (`rest`: what follows it), as the backend would answer it. */
  answer(method: string, rest: string, authorization: string | undefined, body: unknown): Answer {
    const given = (body ?? {}) as Record<string, unknown>;
    if (method === 'POST' && rest === '/join') {
      if (given.handle !== this.handle || this.view.state !== 'started') return refused(404, 'pairing_not_found');
      this.view.state = 'joined';
      const { pairing_id, provider_kind, expires_at } = this.view;
      return { status: 200, body: { pairing_id, provider_kind, ...VERSIONS, pairing_token: this.token, expires_at } };
    }
    const step = new RegExp(`^/${this.pairingId}(?:/([a-z-]+))?$`).exec(rest);
    if (step === null) return refused(404, 'pairing_not_found');
    if (authorization !== `Bearer ${this.token}`) return refused(401, 'unauthorized');
    if (method === 'GET' && step[1] === undefined) return { status: 200, body: this.view };
    if (method !== 'POST' || step[1] === undefined) return refused(404, 'not_found');
    if (this.view.state === 'aborted' || this.view.state === 'completed') return refused(410, 'pairing_ended');
    try {
      return this.step(step[1], given);
    } catch (error) {
      if (!(error instanceof PairingError)) throw error;
      this.failed = `${error.code}: ${error.message}`;
      this.view.state = 'aborted';
      return refused(400, error.code);
    }
  }

  private step(name: string, given: Record<string, unknown>): Answer {
    if (name === 'commit' && this.view.state === 'joined') {
      // The client's side answers at once: its key, once the assistant is bound to its own.
      Object.assign(this.view, { commitment: given.commitment, state: 'client_key_sent' });
      this.view.client_key = this.client.clientKey(String(given.commitment));
      return { status: 200, body: this.view };
    }
    if (name === 'reveal' && this.view.state === 'client_key_sent') {
      const { confirmation } = this.client.reveal(String(given.assistant_key), String(given.nonce));
      Object.assign(this.view, {
        assistant_key: given.assistant_key,
        nonce: given.nonce,
        client_confirmation: confirmation,
        state: 'client_confirmed',
      });
      return { status: 200, body: this.view };
    }
    if (name === 'assistant-confirm' && this.view.state === 'client_confirmed') {
      const keys = this.client.finish(String(given.confirmation));
      this.keyring = keyringOf([keys]);
      Object.assign(this.view, {
        assistant_confirmation: given.confirmation,
        state: 'completed',
        integration_id: this.integration.integration_id,
      });
      return { status: 200, body: this.integration };
    }
    if (name === 'abort') {
      this.failed = `the plugin aborted: ${String(given.reason)}`;
      this.view.state = 'aborted';
      return { status: 200, body: this.view };
    }
    return refused(409, 'pairing_out_of_order');
  }
}

const refused = (status: number, code: string): Answer => ({ status, body: { error: { code, message: code } } });
