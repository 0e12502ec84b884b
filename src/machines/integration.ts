/**
 * An integration's lifecycle: one paired assistant, known to the backend by its id and two tokens (the
 * plugin's RELAY_TOKEN and the client's), kept as digests. Revoked is final: both tokens stop working.
 * Its online state (heartbeats) joins with the backend's endpoints.
 *
 * | State  | Event                    | Next    | Note                                      |
 * |--------|--------------------------|---------|-------------------------------------------|
 * | active | integration.token_rotated| active  | the old token of that role stops working  |
 * | active | integration.revoked      | revoked | both tokens stop working                  |
 */
import { assign, setup, type SnapshotFrom } from 'xstate';
import type { IntegrationCreated, IntegrationEvent, IntegrationRevoked, IntegrationTokenRotated } from './backend-events.js';
import { stepper } from './step.js';

export interface IntegrationContext {
  readonly integration_id: string;
  readonly provider_kind: string;
  readonly relay_token_digest: string;
  readonly client_token_digest: string;
  readonly created_at: number;
  readonly revoked_at: number | undefined;
}

const SCRATCH: IntegrationContext = {
  integration_id: '',
  provider_kind: '',
  relay_token_digest: '',
  client_token_digest: '',
  created_at: 0,
  revoked_at: undefined,
};

export const integrationMachine = setup({
  types: {
    context: {} as IntegrationContext,
    input: {} as IntegrationCreated,
    events: {} as Exclude<IntegrationEvent, IntegrationCreated>,
  },
  actions: {
    rotate: assign((_, event: IntegrationTokenRotated) =>
      event.role === 'relay' ? { relay_token_digest: event.token_digest } : { client_token_digest: event.token_digest },
    ),
    revoke: assign((_, event: IntegrationRevoked) => ({ revoked_at: event.at })),
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
          revoked_at: undefined,
        },
  initial: 'active',
  states: {
    active: {
      on: {
        'integration.token_rotated': { target: 'active', actions: { type: 'rotate', params: ({ event }) => event } },
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

export function evolveIntegration(snapshot: IntegrationSnapshot, event: Exclude<IntegrationEvent, IntegrationCreated>): IntegrationSnapshot {
  return integration.next(snapshot, event)[0];
}

export function isRevoked(snapshot: IntegrationSnapshot): boolean {
  return snapshot.value === 'revoked';
}
