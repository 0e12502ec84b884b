/**
 * Our two pairing sides (`ClientPairing`, `AssistantPairing`) run against each other with fixed keys and
 * reveal nonce, message by message: what PROTOCOL.md's worked example and vectors/pairing.json list.
 */
import { x25519 } from '@noble/curves/ed25519.js';
import { expect } from 'vitest';
import { AssistantPairing, ClientPairing, type KeyPair, type PairingVersions, type SessionKeys } from '../../protocol/index.js';
import { hex } from './vector-files.js';

/** A fixed X25519 secret key (hex) and its public key. */
export const keyPairOf = (secretHex: string): KeyPair => ({ secretKey: hex(secretHex), publicKey: x25519.getPublicKey(hex(secretHex)) });

export interface FixedPairing {
  readonly pairing_id: string;
  /** The code's secret, as `parseCode` reads it back. */
  readonly secret: string;
  readonly versions: PairingVersions;
  readonly client: KeyPair;
  readonly assistant: KeyPair;
  readonly revealNonce: Uint8Array;
}

/** Every message of the pairing, and the keys both sides end with (checked to be the same, as the SAS each shows). */
export function pairBothSides({ pairing_id, secret, versions, client, assistant, revealNonce }: FixedPairing) {
  const clientSide = new ClientPairing(pairing_id, secret, versions, { keyPair: client });
  const assistantSide = new AssistantPairing(pairing_id, secret, versions, { keyPair: assistant, revealNonce });
  const commitment = assistantSide.commitment();
  const client_key = clientSide.clientKey(commitment);
  const revealed = assistantSide.reveal(client_key);
  const shown = clientSide.reveal(revealed.assistant_key, revealed.nonce);
  const confirmed = assistantSide.confirm(shown.confirmation);
  const keys: SessionKeys = clientSide.finish(confirmed.confirmation);
  expect([revealed.sas, confirmed.keys]).toEqual([shown.sas, keys]);
  return {
    commitment,
    client_key,
    assistant_key: revealed.assistant_key,
    nonce: revealed.nonce,
    sas: shown.sas,
    client_confirmation: shown.confirmation,
    assistant_confirmation: confirmed.confirmation,
    keys,
  };
}
