/**
 * The pairing decider: what a message of either side means for one pairing, as events. Each message has
 * its step; sent at its step it moves the pairing on, sent again with the same content it is a duplicate
 * (an answer lost on the way is asked for again), with other content a conflict, and before its step out
 * of order. A message to a pairing past its expiry expires it. Pure: time arrives on the command.
 */
import { openedBy, type Decider, type Decision } from '../core/decider.js';
import type { PairingEvent, PairingStarted } from './pairing-events.js';
import {
  evolvePairing,
  initialPairing,
  isPairingOpen,
  pairingState,
  type PairingContext,
  type PairingSnapshot,
  type PairingState,
} from './pairing.js';

type Fact = { readonly pairing_id: string; readonly at: number };

export type PairingCommand =
  | ({ readonly type: 'start' } & Omit<PairingStarted, 'type'>)
  | ({ readonly type: 'join'; readonly assistant_pairing_token_digest: string } & Fact)
  | ({ readonly type: 'commit'; readonly commitment: string } & Fact)
  | ({ readonly type: 'send_client_key'; readonly client_key: string } & Fact)
  | ({ readonly type: 'reveal'; readonly assistant_key: string; readonly nonce: string } & Fact)
  | ({ readonly type: 'confirm_client'; readonly confirmation: string; readonly client_token_digest: string } & Fact)
  | ({ readonly type: 'complete'; readonly confirmation: string; readonly integration_id: string } & Fact)
  | ({ readonly type: 'abort'; readonly by: 'client' | 'assistant'; readonly reason: string } & Fact)
  | ({ readonly type: 'expire' } & Fact);

export type PairingOutcome =
  | 'started'
  | 'joined'
  | 'committed'
  | 'client_key_sent'
  | 'revealed'
  | 'client_confirmed'
  | 'completed'
  | 'aborted'
  | 'expired'
  /** The same message again: nothing new to log (a confirmation asked again is answered with a fresh token). */
  | 'duplicate'
  /** The same step again with other content. */
  | 'conflict'
  /** A message before its step. */
  | 'out_of_order'
  /** The pairing has ended (completed, aborted or expired); also what a message past its expiry gets. */
  | 'ended'
  | 'unknown'
  | 'unchanged';

type PairingDecision = Decision<PairingEvent, PairingOutcome>;

/** The steps in the one order the protocol allows; a message's step is where it moves the pairing to. */
const STEPS: readonly PairingState[] = ['started', 'joined', 'committed', 'client_key_sent', 'revealed', 'client_confirmed', 'completed'];

const nothing = (outcome: PairingOutcome): PairingDecision => ({ events: [], outcome });

/** Where a message of step `step` stands against the pairing: the next step, one already taken, or ahead. */
function standing(pairing: PairingSnapshot, step: PairingState): 'next' | 'taken' | 'ahead' {
  const at = STEPS.indexOf(pairingState(pairing));
  const target = STEPS.indexOf(step);
  return target === at + 1 ? 'next' : target <= at ? 'taken' : 'ahead';
}

/** A step's message: logged when it is the next step; compared with what was logged when it was taken. */
function stepOf(
  pairing: PairingSnapshot,
  step: PairingState,
  same: (context: PairingContext) => boolean,
  event: PairingEvent,
): PairingDecision {
  switch (standing(pairing, step)) {
    case 'next':
      return { events: [event], outcome: step as PairingOutcome };
    case 'taken':
      return nothing(same(pairing.context) ? 'duplicate' : 'conflict');
    case 'ahead':
      return nothing('out_of_order');
  }
}

function decide(command: PairingCommand, pairing: PairingSnapshot | undefined): PairingDecision {
  if (command.type === 'start') {
    if (pairing !== undefined) return nothing('conflict');
    const { type: _command, ...fields } = command;
    return { events: [{ type: 'pairing.started', ...fields }], outcome: 'started' };
  }
  if (pairing === undefined) return nothing('unknown');
  const { pairing_id, at } = command;
  const fact = { pairing_id, at };
  const open = isPairingOpen(pairing);
  if (command.type === 'expire')
    return open && at >= pairing.context.expires_at
      ? { events: [{ type: 'pairing.expired', ...fact }], outcome: 'expired' }
      : nothing('unchanged');
  if (open && at >= pairing.context.expires_at) return { events: [{ type: 'pairing.expired', ...fact }], outcome: 'ended' };
  const state = pairingState(pairing);
  switch (command.type) {
    case 'abort':
      if (!open) return nothing(state === 'aborted' ? 'duplicate' : 'ended');
      return { events: [{ type: 'pairing.aborted', ...fact, by: command.by, reason: command.reason }], outcome: 'aborted' };
    case 'confirm_client':
      // Asked again before the assistant confirmed: the answer (a client token) was lost, so a fresh one is issued.
      if (state === 'client_confirmed' && pairing.context.client_confirmation === command.confirmation) {
        return {
          events: [
            {
              type: 'pairing.client_confirmed',
              ...fact,
              confirmation: command.confirmation,
              client_token_digest: command.client_token_digest,
            },
          ],
          outcome: 'client_confirmed',
        };
      }
      if (state === 'completed') return nothing(pairing.context.client_confirmation === command.confirmation ? 'duplicate' : 'conflict');
      if (!open) return nothing('ended');
      return stepOf(pairing, 'client_confirmed', (c) => c.client_confirmation === command.confirmation, {
        type: 'pairing.client_confirmed',
        ...fact,
        confirmation: command.confirmation,
        client_token_digest: command.client_token_digest,
      });
    case 'complete':
      if (state === 'completed') return nothing(pairing.context.assistant_confirmation === command.confirmation ? 'duplicate' : 'conflict');
      if (!open) return nothing('ended');
      return stepOf(pairing, 'completed', () => false, {
        type: 'pairing.completed',
        ...fact,
        confirmation: command.confirmation,
        integration_id: command.integration_id,
      });
    default:
      if (!open) return nothing('ended');
  }
  switch (command.type) {
    case 'join':
      // A second join is someone else with the handle: never the same message again.
      return stepOf(pairing, 'joined', () => false, {
        type: 'pairing.joined',
        ...fact,
        assistant_pairing_token_digest: command.assistant_pairing_token_digest,
      });
    case 'commit':
      return stepOf(pairing, 'committed', (c) => c.commitment === command.commitment, {
        type: 'pairing.committed',
        ...fact,
        commitment: command.commitment,
      });
    case 'send_client_key':
      return stepOf(pairing, 'client_key_sent', (c) => c.client_key === command.client_key, {
        type: 'pairing.client_key_sent',
        ...fact,
        client_key: command.client_key,
      });
    case 'reveal':
      return stepOf(pairing, 'revealed', (c) => c.assistant_key === command.assistant_key && c.nonce === command.nonce, {
        type: 'pairing.revealed',
        ...fact,
        assistant_key: command.assistant_key,
        nonce: command.nonce,
      });
  }
}

export const pairingDecider: Decider<PairingSnapshot | undefined, PairingCommand, PairingEvent, PairingOutcome> = openedBy({
  name: 'pairing',
  idOf: (event) => event.pairing_id,
  decide,
  opens: (event): event is PairingStarted => event.type === 'pairing.started',
  open: initialPairing,
  step: evolvePairing,
});
