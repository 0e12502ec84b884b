/**
 * An integration's lifecycle: one paired assistant, known to the backend by its id and two tokens (the
 * plugin's RELAY_TOKEN and the client's), kept as digests. While active, its plugin is unseen (no
 * heartbeat yet), online, or offline (three heartbeats missed; one brings it back). Revoked is final: both
 * tokens stop working.
 *
 * | State          | Event                     | Next           | Note                                      |
 * |----------------|---------------------------|----------------|-------------------------------------------|
 * | active.unseen  | integration.seen          | active.online  | its first heartbeat                        |
 * | active.online  | integration.seen          | active.online  | its plugin says something new of itself    |
 * | active.online  | integration.offline       | active.offline | three heartbeats missed                    |
 * | active.offline | integration.seen          | active.online  | one heartbeat brings it back               |
 * | active.*       | integration.token_rotated | active         | the old token of that role stops working   |
 * | active.*       | integration.rekey_requested | active       | the client asks to rotate the keys          |
 * | active.*       | integration.rekey_answered | active        | the plugin answered the rotation            |
 * | active.*       | integration.revoked       | revoked        | both tokens stop working                   |
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import type {
  IntegrationCompacted,
  IntegrationCreated,
  IntegrationEvent,
  IntegrationRekeyAnswered,
  IntegrationRekeyRequested,
  IntegrationRevoked,
  IntegrationSeen,
  IntegrationStreamHeld,
  IntegrationTokenRotated,
} from './backend-events.js';
import { stepper } from '../core/step.js';

export interface IntegrationContext {
  readonly integration_id: string;
  readonly provider_kind: string;
  readonly relay_token_digest: string;
  readonly client_token_digest: string;
  readonly created_at: number;
  /** Created by a pairing (`integration.created` with `pairing`): it takes only BYO jobs (PROTOCOL.md 7.13). */
  readonly paired: boolean;
  readonly revoked_at: number | undefined;
  /** What its plugin said of itself at its latest `integration.seen`. */
  readonly seen: Omit<IntegrationSeen, 'type' | 'integration_id'> | undefined;
  /** The latest key rotation asked for, and its answer once the plugin gave one. */
  readonly rekey: Rekey | undefined;
  /** When the latest rotations were asked for, oldest first, at most `REKEY_TIMES_KEPT`: what the limit on rotations an hour counts. */
  readonly rekeys_at: readonly number[];
}

/** Times of rotations kept per integration: the most the limit on rotations an hour can count (quotas.ts). */
export const REKEY_TIMES_KEPT = 32;

export interface Rekey {
  readonly rekey_id: string;
  readonly kid: string;
  readonly client_key: string;
  readonly mac: string;
  readonly requested_at: number;
  readonly answer: { readonly assistant_key: string; readonly mac: string } | undefined;
}

const SCRATCH: IntegrationContext = {
  integration_id: '',
  provider_kind: '',
  relay_token_digest: '',
  client_token_digest: '',
  created_at: 0,
  paired: false,
  revoked_at: undefined,
  seen: undefined,
  rekey: undefined,
  rekeys_at: [],
};

export const integrationMachine = setup({
  types: {
    context: {} as IntegrationContext,
    input: {} as IntegrationCreated,
    // Which node holds its stream is not its lifecycle: the projection keeps it.
    events: {} as Exclude<IntegrationEvent, IntegrationCreated | IntegrationStreamHeld>,
  },
  actions: {
    rotate: assign((_, event: IntegrationTokenRotated) =>
      event.role === 'relay' ? { relay_token_digest: event.token_digest } : { client_token_digest: event.token_digest },
    ),
    revoke: assign((_, event: IntegrationRevoked) => ({ revoked_at: event.at })),
    see: assign((_, { type: _seen, integration_id: _id, ...seen }: IntegrationSeen) => ({ seen })),
    requestRekey: assign(({ context }, event: IntegrationRekeyRequested) => ({
      rekey: {
        rekey_id: event.rekey_id,
        kid: event.kid,
        client_key: event.client_key,
        mac: event.mac,
        requested_at: event.at,
        answer: undefined,
      },
      rekeys_at: [...context.rekeys_at, event.at].slice(-REKEY_TIMES_KEPT),
    })),
    answerRekey: assign(({ context }, event: IntegrationRekeyAnswered) => ({
      rekey: { ...context.rekey!, answer: { assistant_key: event.assistant_key, mac: event.mac } },
    })),
  },
}).createMachine({
  id: 'integration',
  // `transition()` evaluates this with no input when it builds its scratch actor: keep it total and cheap.
  context: ({ input }) =>
    input === undefined
      ? SCRATCH
      : {
          integration_id: input.integration_id,
          provider_kind: input.provider_kind,
          relay_token_digest: input.relay_token_digest,
          client_token_digest: input.client_token_digest,
          created_at: input.at,
          paired: input.pairing !== undefined,
          revoked_at: undefined,
          seen: undefined,
          rekey: undefined,
          rekeys_at: [],
        },
  initial: 'active',
  states: {
    active: {
      initial: 'unseen',
      states: {
        unseen: { on: { 'integration.seen': { target: 'online', actions: { type: 'see', params: ({ event }) => event } } } },
        online: {
          on: {
            'integration.seen': { target: 'online', actions: { type: 'see', params: ({ event }) => event } },
            'integration.offline': { target: 'offline' },
          },
        },
        offline: { on: { 'integration.seen': { target: 'online', actions: { type: 'see', params: ({ event }) => event } } } },
      },
      on: {
        'integration.token_rotated': { actions: { type: 'rotate', params: ({ event }) => event } },
        'integration.rekey_requested': { actions: { type: 'requestRekey', params: ({ event }) => event } },
        'integration.rekey_answered': { actions: { type: 'answerRekey', params: ({ event }) => event } },
        'integration.revoked': { target: 'revoked', actions: { type: 'revoke', params: ({ event }) => event } },
      },
    },
    revoked: { type: 'final' },
  },
});

export type IntegrationSnapshot = SnapshotFrom<typeof integrationMachine>;

const integration = stepper(integrationMachine);

export function initialIntegration(created: IntegrationCreated): IntegrationSnapshot {
  return integration.initial(created)[0];
}

export function evolveIntegration(
  snapshot: IntegrationSnapshot,
  event: Exclude<IntegrationEvent, IntegrationCreated | IntegrationStreamHeld>,
): IntegrationSnapshot {
  return integration.next(snapshot, event)[0];
}

/** What retention logs for the integration as it stands (`integration.compacted`). */
export function compactionOf(snapshot: IntegrationSnapshot, at: number): IntegrationCompacted {
  return {
    type: 'integration.compacted',
    integration_id: snapshot.context.integration_id,
    state: snapshot.value,
    context: snapshot.context,
    at,
  };
}

/** The integration a compaction stands for: the snapshot its events had folded to. */
export function compactedIntegration(event: IntegrationCompacted): IntegrationSnapshot {
  return integrationMachine.resolveState({ value: event.state, context: event.context });
}

export function isRevoked(snapshot: IntegrationSnapshot): boolean {
  return snapshot.value === 'revoked';
}

export function integrationState(snapshot: IntegrationSnapshot): 'unseen' | 'online' | 'offline' | 'revoked' {
  return typeof snapshot.value === 'string' ? 'revoked' : (snapshot.value.active as 'unseen');
}

export function isOnline(snapshot: IntegrationSnapshot): boolean {
  return typeof snapshot.value === 'object' && snapshot.value.active === 'online';
}
