/** The pairing decider, given(events) → when(command) → then(events): each message only at its step. */
import { describe, it } from 'vitest';
import { pairingDecider, type PairingCommand } from '../../machines/reasoning/pairing-decider.js';
import type { PairingEvent } from '../../machines/reasoning/pairing-events.js';
import { deciderSpecification } from '../support/decider.js';

const spec = deciderSpecification(pairingDecider);
const P = 'p-1';
const started: PairingEvent = {
  type: 'pairing.started',
  pairing_id: P,
  handle: 'ABCDE',
  provider_kind: 'k',
  schema_version: 1,
  envelope_version: 1,
  client_pairing_token_digest: 'c',
  expires_at: 1_000,
  at: 0,
};
const joined: PairingEvent = { type: 'pairing.joined', pairing_id: P, assistant_pairing_token_digest: 'a', at: 1 };
const committed: PairingEvent = { type: 'pairing.committed', pairing_id: P, commitment: 'm', at: 2 };
const keyed: PairingEvent = { type: 'pairing.client_key_sent', pairing_id: P, client_key: 'ck', at: 3 };
const revealed: PairingEvent = { type: 'pairing.revealed', pairing_id: P, assistant_key: 'ak', nonce: 'n', at: 4 };
const confirmed: PairingEvent = { type: 'pairing.client_confirmed', pairing_id: P, confirmation: 'cc', client_token_digest: 't1', at: 5 };
const completed: PairingEvent = { type: 'pairing.completed', pairing_id: P, confirmation: 'ac', integration_id: 'i', at: 6 };
type Message = PairingCommand extends infer C ? (C extends unknown ? Omit<C, 'pairing_id' | 'at'> : never) : never;
const at = (command: Message, when = 10) => ({ ...command, pairing_id: P, at: when }) as PairingCommand;

describe('pairing decider', () => {
  it('takes each message at its step, in order', () => {
    spec
      .given([started])
      .when(at({ type: 'join', assistant_pairing_token_digest: 'a' }))
      .then([{ type: 'pairing.joined', pairing_id: P, assistant_pairing_token_digest: 'a', at: 10 }], 'joined');
    spec
      .given([started, joined])
      .when(at({ type: 'commit', commitment: 'm' }))
      .then([{ type: 'pairing.committed', pairing_id: P, commitment: 'm', at: 10 }], 'committed');
    spec
      .given([started, joined, committed, keyed, revealed, confirmed])
      .when(at({ type: 'complete', confirmation: 'ac', integration_id: 'i' }))
      .then([{ type: 'pairing.completed', pairing_id: P, confirmation: 'ac', integration_id: 'i', at: 10 }], 'completed');
  });

  it('a message before its step is out of order; the same again a duplicate; another a conflict', () => {
    spec
      .given([started, joined])
      .when(at({ type: 'send_client_key', client_key: 'ck' }))
      .thenNothing('out_of_order');
    spec
      .given([started, joined, committed])
      .when(at({ type: 'commit', commitment: 'm' }))
      .thenNothing('duplicate');
    spec
      .given([started, joined, committed])
      .when(at({ type: 'commit', commitment: 'other' }))
      .thenNothing('conflict');
    spec
      .given([started, joined])
      .when(at({ type: 'join', assistant_pairing_token_digest: 'b' }))
      .thenNothing('conflict');
  });

  it('the client asking again for its token before completion logs a fresh digest; after completion it is a duplicate', () => {
    spec
      .given([started, joined, committed, keyed, revealed, confirmed])
      .when(at({ type: 'confirm_client', confirmation: 'cc', client_token_digest: 't2' }))
      .then(
        [{ type: 'pairing.client_confirmed', pairing_id: P, confirmation: 'cc', client_token_digest: 't2', at: 10 }],
        'client_confirmed',
      );
    spec
      .given([started, joined, committed, keyed, revealed, confirmed, completed])
      .when(at({ type: 'confirm_client', confirmation: 'cc', client_token_digest: 't3' }))
      .thenNothing('duplicate');
    spec
      .given([started, joined, committed, keyed, revealed, confirmed, completed])
      .when(at({ type: 'complete', confirmation: 'ac', integration_id: 'j' }))
      .thenNothing('duplicate');
  });

  it('expires at expires_at, not before; a message past it expires the pairing and is answered ended', () => {
    spec
      .given([started])
      .when(at({ type: 'expire' }, 999))
      .thenNothing('unchanged');
    spec
      .given([started])
      .when(at({ type: 'expire' }, 1_000))
      .then([{ type: 'pairing.expired', pairing_id: P, at: 1_000 }], 'expired');
    spec
      .given([started, joined])
      .when(at({ type: 'commit', commitment: 'm' }, 1_000))
      .then([{ type: 'pairing.expired', pairing_id: P, at: 1_000 }], 'ended');
  });

  it('either side may abort an open pairing; an ended one takes nothing', () => {
    spec
      .given([started, joined])
      .when(at({ type: 'abort', by: 'assistant', reason: 'confirmation_failed' }))
      .then([{ type: 'pairing.aborted', pairing_id: P, by: 'assistant', reason: 'confirmation_failed', at: 10 }], 'aborted');
    spec
      .given([started, { type: 'pairing.aborted', pairing_id: P, by: 'client', reason: 'x', at: 1 }])
      .when(at({ type: 'commit', commitment: 'm' }))
      .thenNothing('ended');
    spec
      .given([])
      .when(at({ type: 'commit', commitment: 'm' }))
      .thenNothing('unknown');
  });
});
