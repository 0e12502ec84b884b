/**
 * A pairing's lifecycle in the backend (5, PROTOCOL.md 7): the client starts it, the assistant's side
 * joins with the code's handle, then each side's messages in the one order commit-then-reveal allows. The
 * backend checks the order and nothing else: it cannot read the keys' worth.
 *
 * | State                 | Event                    | Next                  | Note                                        |
 * |-----------------------|--------------------------|-----------------------|---------------------------------------------|
 * | open.started          | pairing.joined           | open.joined           | the assistant's side has the handle         |
 * | open.joined           | pairing.committed        | open.committed        | to its key, before it sees the client's      |
 * | open.committed        | pairing.client_key_sent  | open.client_key_sent  | only now may the client show its key         |
 * | open.client_key_sent  | pairing.revealed         | open.revealed         | the assistant's key and nonce                |
 * | open.revealed         | pairing.client_confirmed | open.client_confirmed | the client's MAC; its client token issued    |
 * | open.client_confirmed | pairing.client_confirmed | open.client_confirmed | asked again: a fresh client token            |
 * | open.client_confirmed | pairing.completed        | completed             | the assistant's MAC: the integration exists  |
 * | open.*                | pairing.aborted          | aborted               | a side gave up                               |
 * | open.*                | pairing.expired          | expired               | past `expires_at`                            |
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import type {
  PairingAborted,
  PairingClientConfirmed,
  PairingClientKeySent,
  PairingCommitted,
  PairingCompleted,
  PairingEvent,
  PairingJoined,
  PairingRevealed,
  PairingStarted,
} from './pairing-events.js';
import { stepper } from '../core/step.js';

export interface PairingContext {
  readonly pairing_id: string;
  readonly handle: string;
  readonly provider_kind: string;
  readonly schema_version: number;
  readonly envelope_version: number;
  readonly client_pairing_token_digest: string;
  readonly assistant_pairing_token_digest: string | undefined;
  /** Where the start came from (PROTOCOL.md 7.8); undefined in older logs. */
  readonly source: string | undefined;
  readonly created_at: number;
  readonly expires_at: number;
  readonly commitment: string | undefined;
  readonly client_key: string | undefined;
  readonly assistant_key: string | undefined;
  readonly nonce: string | undefined;
  readonly client_confirmation: string | undefined;
  readonly client_token_digest: string | undefined;
  readonly assistant_confirmation: string | undefined;
  readonly integration_id: string | undefined;
  readonly aborted: { readonly by: 'client' | 'assistant'; readonly reason: string } | undefined;
  readonly ended_at: number | undefined;
}

function initialContext(started: PairingStarted): PairingContext {
  return {
    pairing_id: started.pairing_id,
    handle: started.handle,
    provider_kind: started.provider_kind,
    schema_version: started.schema_version,
    envelope_version: started.envelope_version,
    client_pairing_token_digest: started.client_pairing_token_digest,
    assistant_pairing_token_digest: undefined,
    source: started.source,
    created_at: started.at,
    expires_at: started.expires_at,
    commitment: undefined,
    client_key: undefined,
    assistant_key: undefined,
    nonce: undefined,
    client_confirmation: undefined,
    client_token_digest: undefined,
    assistant_confirmation: undefined,
    integration_id: undefined,
    aborted: undefined,
    ended_at: undefined,
  };
}

const SCRATCH = initialContext({
  type: 'pairing.started',
  pairing_id: '',
  handle: '',
  provider_kind: '',
  schema_version: 1,
  envelope_version: 1,
  client_pairing_token_digest: '',
  expires_at: 0,
  at: 0,
});

export const pairingMachine = setup({
  types: {
    context: {} as PairingContext,
    input: {} as PairingStarted,
    events: {} as Exclude<PairingEvent, PairingStarted>,
  },
  actions: {
    join: assign((_, event: PairingJoined) => ({ assistant_pairing_token_digest: event.assistant_pairing_token_digest })),
    commit: assign((_, event: PairingCommitted) => ({ commitment: event.commitment })),
    sendClientKey: assign((_, event: PairingClientKeySent) => ({ client_key: event.client_key })),
    reveal: assign((_, event: PairingRevealed) => ({ assistant_key: event.assistant_key, nonce: event.nonce })),
    confirmClient: assign((_, event: PairingClientConfirmed) => ({
      client_confirmation: event.confirmation,
      client_token_digest: event.client_token_digest,
    })),
    complete: assign((_, event: PairingCompleted) => ({
      assistant_confirmation: event.confirmation,
      integration_id: event.integration_id,
      ended_at: event.at,
    })),
    abort: assign((_, event: PairingAborted) => ({ aborted: { by: event.by, reason: event.reason }, ended_at: event.at })),
    end: assign((_, event: { readonly at: number }) => ({ ended_at: event.at })),
  },
}).createMachine({
  id: 'pairing',
  // `transition()` evaluates this with no input when it builds its scratch actor: keep it total and cheap.
  context: ({ input }) => (input === undefined ? SCRATCH : initialContext(input)),
  initial: 'open',
  states: {
    open: {
      initial: 'started',
      states: {
        started: { on: { 'pairing.joined': { target: 'joined', actions: { type: 'join', params: ({ event }) => event } } } },
        joined: { on: { 'pairing.committed': { target: 'committed', actions: { type: 'commit', params: ({ event }) => event } } } },
        committed: {
          on: {
            'pairing.client_key_sent': { target: 'client_key_sent', actions: { type: 'sendClientKey', params: ({ event }) => event } },
          },
        },
        client_key_sent: { on: { 'pairing.revealed': { target: 'revealed', actions: { type: 'reveal', params: ({ event }) => event } } } },
        revealed: {
          on: {
            'pairing.client_confirmed': { target: 'client_confirmed', actions: { type: 'confirmClient', params: ({ event }) => event } },
          },
        },
        client_confirmed: {
          on: {
            'pairing.client_confirmed': { target: 'client_confirmed', actions: { type: 'confirmClient', params: ({ event }) => event } },
            'pairing.completed': { target: '#pairing.completed', actions: { type: 'complete', params: ({ event }) => event } },
          },
        },
      },
      on: {
        'pairing.aborted': { target: 'aborted', actions: { type: 'abort', params: ({ event }) => event } },
        'pairing.expired': { target: 'expired', actions: { type: 'end', params: ({ event }) => event } },
      },
    },
    completed: { type: 'final' },
    aborted: { type: 'final' },
    expired: { type: 'final' },
  },
});

export type PairingSnapshot = SnapshotFrom<typeof pairingMachine>;
export type PairingState =
  'started' | 'joined' | 'committed' | 'client_key_sent' | 'revealed' | 'client_confirmed' | 'completed' | 'aborted' | 'expired';

const pairing = stepper(pairingMachine);

export function initialPairing(started: PairingStarted): PairingSnapshot {
  return pairing.initial(started)[0];
}

export function evolvePairing(snapshot: PairingSnapshot, event: Exclude<PairingEvent, PairingStarted>): PairingSnapshot {
  return pairing.next(snapshot, event)[0];
}

export function pairingState(snapshot: PairingSnapshot): PairingState {
  return typeof snapshot.value === 'string' ? (snapshot.value as PairingState) : (snapshot.value.open as PairingState);
}

export function isPairingOpen(snapshot: PairingSnapshot): boolean {
  return typeof snapshot.value === 'object';
}
