/**
 * What the backend's log stores of each pairing (5, PROTOCOL.md 7): one event per message the two sides
 * sent through it, in the order the protocol allows them. The backend carries these messages and reads
 * none of them: public keys, a commitment, a nonce and two MACs, never a secret. Its tokens for each side
 * are kept as digests.
 */

interface PairingFact {
  readonly pairing_id: string;
  readonly at: number;
}

/** A client started a pairing; it waits for the assistant's side to join with the code's handle. */
export interface PairingStarted extends PairingFact {
  readonly type: 'pairing.started';
  readonly handle: string;
  readonly provider_kind: string;
  readonly schema_version: number;
  readonly envelope_version: number;
  /** SHA-256 of the token the client's side presents for this pairing. */
  readonly client_pairing_token_digest: string;
  /** Epoch ms: an open pairing past it expires. */
  readonly expires_at: number;
  /** The source address it came from (an IPv4 address or an IPv6 /64), for the limits each source has (PROTOCOL.md 7.8). Absent in older logs. */
  readonly source?: string;
  /** The SHA-256 of the operator's pairing ticket it used up (`--pairing ticket`, PROTOCOL.md 7.8). */
  readonly ticket_digest?: string;
}

/** The assistant's side joined with the handle. */
export interface PairingJoined extends PairingFact {
  readonly type: 'pairing.joined';
  readonly assistant_pairing_token_digest: string;
}

/** The assistant committed to its key (and a nonce) before seeing the client's. */
export interface PairingCommitted extends PairingFact {
  readonly type: 'pairing.committed';
  readonly commitment: string;
}

/** The client sent its public key, having seen the commitment. */
export interface PairingClientKeySent extends PairingFact {
  readonly type: 'pairing.client_key_sent';
  readonly client_key: string;
}

/** The assistant revealed its public key and nonce. */
export interface PairingRevealed extends PairingFact {
  readonly type: 'pairing.revealed';
  readonly assistant_key: string;
  readonly nonce: string;
}

/** The client confirmed its keys; its client token for the integration is issued (again, if it asks again). */
export interface PairingClientConfirmed extends PairingFact {
  readonly type: 'pairing.client_confirmed';
  readonly confirmation: string;
  readonly client_token_digest: string;
}

/** The assistant checked the client's confirmation and confirmed its own: the integration exists. */
export interface PairingCompleted extends PairingFact {
  readonly type: 'pairing.completed';
  readonly confirmation: string;
  readonly integration_id: string;
}

/** A side gave up (a wrong code, a key that did not match its commitment), or the backend refused it. */
export interface PairingAborted extends PairingFact {
  readonly type: 'pairing.aborted';
  readonly by: 'client' | 'assistant';
  readonly reason: string;
}

/** Past `expires_at` while still open. */
export interface PairingExpired extends PairingFact {
  readonly type: 'pairing.expired';
}

/**
 * The operator issued a pairing ticket (`--pairing ticket`): one pairing may start with it before
 * `expires_at`. Only its digest is kept; the start that uses it names it (`ticket_digest`).
 */
export interface PairingTicketIssued {
  readonly type: 'pairing_ticket.issued';
  readonly ticket_digest: string;
  readonly expires_at: number;
  readonly at: number;
}

export type PairingEvent =
  | PairingStarted
  | PairingJoined
  | PairingCommitted
  | PairingClientKeySent
  | PairingRevealed
  | PairingClientConfirmed
  | PairingCompleted
  | PairingAborted
  | PairingExpired;
